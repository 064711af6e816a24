#pragma once

// Why a task fits no node: the failure reasons the predicates give and their per-node tally,
// rendered as Volcano's FitErrors (pkg/scheduler/api/unschedule_info.go).

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace muster::core {

// Scheduling failure reasons ("Insufficient cpu", "node(s) had untolerated taint {k: v}") are
// interned once into small ids so that the hot filter loop never builds strings. Thread-safe.
class FitReasons {
 public:
  static int Id(std::string_view text);
  static std::string Text(int id);
};

// Why a task does not fit, per node; Error() renders Volcano's
// "0/<N> nodes are unavailable: <k> <reason>, ...." text.
class FitErrors {
 public:
  void SetNodeError(int node, int reason);
  bool empty() const { return nodes_ == 0; }
  std::string Error() const;

 private:
  int nodes_ = 0;
  std::vector<std::pair<int, int>> counts_;  // reason id, nodes
};

// "<n> <reason>" parts in text order, joined by ", ": the histogram of Volcano's fit error
// messages (FitErrors.Error, JobInfo.FitError).
std::string FitHistogram(const std::map<std::string, int>& counts);

}  // namespace muster::core
