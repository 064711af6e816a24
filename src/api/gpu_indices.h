#pragma once

// muster.dev/gpu-indices: the annotation in which the scheduler names the devices of
// nvidia.com/gpu it gave a pod ("0,3": node-local device numbers, 0 the first, as
// CUDA_VISIBLE_DEVICES numbers them), written with the pod's binding (scheduler/write_plan.h),
// read back by the scheduling core when it rebuilds a node's devices (core/cluster.h) and by the
// node when it admits the pod (node/pod_worker.h). One key, one writer, one reader, so that the
// three never disagree on what a value means.
//
// A value is a comma-separated list of device numbers, each 1 to 6 decimal digits; "" is no
// devices. Anything else (a sign, a space, an empty item, a trailing comma) is malformed.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace muster::api {

inline constexpr char kGpuIndicesAnnotation[] = "muster.dev/gpu-indices";

// "0,3" for {0, 3}; "" for none.
std::string FormatGpuIndices(const std::vector<int>& gpus);

// The device numbers of a value; {} for ""; nullopt when malformed.
std::optional<std::vector<int>> ParseGpuIndices(std::string_view text);

}  // namespace muster::api
