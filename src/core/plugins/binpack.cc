// binpack: Volcano's binpack score, which here counts nvidia.com/gpu by default (Volcano ignores
// GPUs unless they are listed). A node scores the weighted mean, over the resources the task
// asks for, of its used fraction once the task is placed, times binpack.weight; a node the task
// does not fit scores 0. Arguments: binpack.weight, binpack.cpu, binpack.memory (default 1 each),
// binpack.resources (a comma-separated list of more resources) and binpack.resources.<name>
// (their weights, default 1). Follows Volcano's pkg/scheduler/plugins/binpack/binpack.go.

#include <string>

#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/plugins/binpack_weights.h"
#include "core/plugins/node_score.h"

namespace muster::core {
namespace {

class BinpackPlugin : public Plugin {
 public:
  explicit BinpackPlugin(const PluginOption& opt) {
    weight_ = opt.Number("binpack.weight", 1).value_or(1);
    weights_ = BinpackWeights(opt, "binpack");
  }

  void OnSessionOpen(Session& ssn) override {
    ssn.AddNodeOrderFn("binpack", [this](const TaskInfo& t, const NodeInfo& n) {
      return BinpackFraction(weights_, t.resreq, n.allocatable, n.used) * kMaxNodeScore *
             weight_;
    });
  }

 private:
  double weight_;
  Resources weights_;
};

}  // namespace

std::unique_ptr<Plugin> NewBinpackPlugin(const PluginOption& opt) {
  return std::make_unique<BinpackPlugin>(opt);
}

}  // namespace muster::core
