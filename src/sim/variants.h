#pragma once

// openb trace variants made the way the FGD paper's authors made theirs (Weng et al., "Beware of
// Fragmentation", USENIX ATC 2023; the files are in github.com/alibaba/clusterdata,
// cluster-trace-gpu-v2023/csv/). The published gpushare<X> pod lists are the default trace with
// its GPU pods redrawn so that GPU-sharing pods carry X % of the GPU demand: the CPU-only pods
// are kept as they are and first, the number of GPU pods stays, then come the drawn sharing pods
// and the drawn other GPU pods, each a copy of a default-trace row, renamed openb-pod-0000 on.
// docs/sim.md ("Trace variants") shows how that was read off the published gpushare40.
//
// The published multigpu<X> pod lists are the default trace kept whole, in its order, followed by
// copies of its multi-GPU pods (two GPUs or more), drawn uniformly with replacement until such
// pods carry X % of the GPU demand (read off the published multigpu20..50: the first 8,152 rows
// are the default trace's, every appended row is one of its 75 multi-GPU rows).
//
// The published cpu<X> pod lists (cpu0 to cpu300) keep every GPU pod of the default trace, in its
// order, and draw copies of its CPU-only pods so that those are X per mille of the pods (cpu250:
// 25.0 %): the drawn CPU-only pods first, then the GPU pods, renamed openb-pod-0000 on (read off
// the published files, docs/sim.md).
//
// The draw uses Go's math/rand (sim/go_rand.h) seeded with the caller's seed: the same trace,
// share and seed give the same file.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/trace.h"

namespace muster::sim {

// The pod classes of a variant (those of the packing experiment, docs/fgd.md section 1.2).
bool UsesGpu(const TracePod& pod);    // num_gpu > 0 and gpu_milli > 0
bool SharesGpu(const TracePod& pod);  // one GPU, less than 1000 milli
bool MultiGpu(const TracePod& pod);   // two GPUs or more
// GPU demand in milli: num_gpu x gpu_milli (at most 1000 per GPU); 0 without GPUs.
int64_t GpuDemand(const TracePod& pod);
// The percentage of the pods' GPU demand that GPU-sharing pods carry (0 without GPU demand).
double ShareOfGpuDemand(const std::vector<TracePod>& pods);

// The variant of `pods` in which GPU-sharing pods carry `share_percent` (0..100) of the GPU
// demand, in expectation. With N GPU pods, m_s the mean demand of the sharing pods and m_w that
// of the other GPU pods, it draws round(N X m_w / ((1 - X) m_s + X m_w)) sharing pods and the
// rest of the N from the other GPU pods (X = share_percent / 100); each class is drawn without
// replacement when it has enough pods and with replacement otherwise. InvalidArgument for a
// share outside 0..100, a trace without GPU pods, or a class the share needs that the trace
// lacks.
absl::StatusOr<std::vector<TracePod>> GpuShareVariant(const std::vector<TracePod>& pods,
                                                       double share_percent, int64_t seed);

// The percentage of the pods' GPU demand that multi-GPU pods carry (0 without GPU demand).
double MultiGpuShareOfGpuDemand(const std::vector<TracePod>& pods);

// The variant of `pods` in which multi-GPU pods carry at least `multi_percent` of the GPU
// demand: every pod of `pods` in order, then copies of its multi-GPU pods drawn uniformly with
// replacement, one at a time, until their share reaches `multi_percent` (so it overshoots by
// less than one pod's demand). InvalidArgument for a share outside 0..100 (100 excluded), a
// trace without multi-GPU pods, or a share below the one the trace already has.
absl::StatusOr<std::vector<TracePod>> MultiGpuVariant(const std::vector<TracePod>& pods,
                                                       double multi_percent, int64_t seed);

// The percentage of the pods that are CPU-only (no GPU demand; 0 without pods).
double CpuOnlyShareOfPods(const std::vector<TracePod>& pods);

// The variant of `pods` in which CPU-only pods are `cpu_percent` (0..100, 100 excluded) of the
// pods: with N GPU pods and X = cpu_percent / 100 it draws round(N X / (1 - X)) CPU-only pods,
// without replacement when the trace has enough and with replacement otherwise, puts them first
// and every GPU pod of `pods` after them in order. InvalidArgument for a share outside 0..100 (100
// excluded), a trace without GPU pods, or a share above 0 for a trace without CPU-only pods.
absl::StatusOr<std::vector<TracePod>> CpuOnlyVariant(const std::vector<TracePod>& pods,
                                                      double cpu_percent, int64_t seed);

// The pods as an openb pod list (header and one line per pod, the eleven columns LoadOpenbPods
// reads; absent times are empty fields).
std::string OpenbPodsCsv(const std::vector<TracePod>& pods);

}  // namespace muster::sim
