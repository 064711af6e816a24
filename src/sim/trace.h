#pragma once

// Trace loaders: the Alibaba openb pod and node lists (github.com/alibaba/clusterdata,
// cluster-trace-gpu-v2023) and the Microsoft Philly job list (as published with AdaptDL).
//
// Every loader reads a CSV file with a header line. A header naming a column the loader does
// not know, or missing one it needs, a value that does not parse, and a file without rows are
// errors (InvalidArgument, or NotFound for a missing file) that name the file and the line:
// "trace.csv:12: column num_gpu: \"x\" is not an integer". Nothing is guessed.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace muster::sim {

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int64_t gpu_milli = 0;  // per GPU as written (0..1000; values above 1000 are read as 1000)
  std::string gpu_spec;   // '|'-separated GPU models; "" for any
  std::string qos;
  std::string pod_phase;
  // Seconds from the trace's start; absent in files without time columns.
  std::optional<int64_t> creation_time;
  std::optional<int64_t> deletion_time;
  std::optional<int64_t> scheduled_time;
};

struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;
};

struct PhillyJob {
  int64_t submit_time = 0;  // Unix seconds (the trace's timestamps, read as UTC)
  double duration = 0;      // seconds
  int gpus = 0;
  std::string cluster;      // virtual cluster id
};

// openb_pod_list_*.csv: name, cpu_milli, memory_mib, num_gpu, gpu_milli required; gpu_spec, qos,
// pod_phase, creation_time, deletion_time, scheduled_time optional.
absl::StatusOr<std::vector<TracePod>> LoadOpenbPods(const std::string& path);
// openb_node_list_*.csv: sn, cpu_milli, memory_mib, gpu, model.
absl::StatusOr<std::vector<TraceNode>> LoadOpenbNodes(const std::string& path);
// philly.csv: timestamp (YYYY-MM-DD HH:MM:SS), duration, num_gpus, gpu_time, cluster.
absl::StatusOr<std::vector<PhillyJob>> LoadPhillyJobs(const std::string& path);

}  // namespace muster::sim
