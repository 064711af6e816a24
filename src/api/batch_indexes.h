#pragma once

// The index sets of Indexed batch/v1 Jobs as their status and success policy write them:
// "1,3-5,7", decimal indexes in increasing order, three or more consecutive ones as a
// "first-last" interval (kube's pkg/controller/job indexed_job_utils.go), and the parser of
// pkg/apis/batch/validation (validateIndexesFormat) with its messages. Shared by admission and
// the Job controller.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace muster::api {

// The indexes of `text` (each below `completions`). InvalidArgument with kube's message: `too
// large index: "7"`, `non-increasing order, previous: 3, current: 2`, `cannot convert string to
// integer for index: "a"`, `the fragment "1-2-3" violates the requirement that an index interval
// can have at most two parts separated by '-'`. "" is the empty set.
absl::StatusOr<std::set<int32_t>> ParseIndexes(std::string_view text, int32_t completions);

// The set as kube writes it: "0,2-4" ("" when empty).
std::string FormatIndexes(const std::set<int32_t>& indexes);

}  // namespace muster::api
