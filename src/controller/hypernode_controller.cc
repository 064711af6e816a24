// The HyperNode controller (hypernode_controller.h), after Volcano's
// pkg/controllers/hypernode/hypernode_handler.go (syncHyperNodeStatus), with the count the CRD
// describes.

#include "controller/hypernode_controller.h"

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/json_access.h"
#include "api/json_codec.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "client/informer.h"
#include "controller/work_queue.h"
#include "core/hypernodes.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

// The one work item: every HyperNode is recounted at once (a rack's change moves its spine's
// count), so requests coalesce into it.
constexpr char kRecountKey[] = "hypernodes";

const json::object* LabelsJson(const json::object& node) {
  return api::ObjectAt(api::ObjectAt(node, "metadata"), "labels");
}

// Whether two states of a Node carry the same labels (none and {} alike), without copying them:
// every Node status write passes here.
bool SameLabels(const json::object& a, const json::object& b) {
  const json::object* la = LabelsJson(a);
  const json::object* lb = LabelsJson(b);
  if (la == nullptr || la->empty()) return lb == nullptr || lb->empty();
  return lb != nullptr && *la == *lb;
}

api::StringMap LabelsOf(const json::object& node) {
  api::StringMap labels;
  const json::object* l = LabelsJson(node);
  if (l == nullptr) return labels;
  for (const auto& [key, value] : *l) {
    if (value.is_string()) labels.emplace(key, std::string(value.get_string()));
  }
  return labels;
}

int64_t StoredCount(const json::object& hypernode) {
  const json::value* count = nullptr;
  if (const json::object* status = api::ObjectAt(hypernode, "status")) {
    count = status->if_contains("nodeCount");
  }
  if (count == nullptr) return 0;
  if (count->is_int64()) return count->get_int64();
  if (count->is_uint64()) return static_cast<int64_t>(count->get_uint64());
  return -1;  // not a number: rewritten
}

struct HyperNodeController final : public Controller {
  HyperNodeController(client::Client& c, HyperNodeControllerOptions o)
      : client(c),
        options(o),
        hypernodes(c, client::HyperNodes()),
        nodes(c, client::Nodes()),
        requests({1, options.backoff_base, options.backoff_max},
                 [this](const WorkItem&, int) { return Recount(); }) {}

  ~HyperNodeController() override { Stop(); }
  absl::Status Start(std::chrono::milliseconds sync_timeout) override;
  void Stop() override;
  bool WaitIdle(std::chrono::milliseconds timeout) override;

  client::Client& client;
  HyperNodeControllerOptions options;
  client::Informer hypernodes;
  client::Informer nodes;
  WorkQueues requests;
  std::atomic<int> hypernode_count{0};  // in the informer, for the Node handlers

  static WorkItem Item() {
    WorkItem item;
    item.key = kRecountKey;
    return item;
  }
  void RecountNow() { requests.Add(Item()); }
  void RecountSoon() {
    if (hypernode_count.load() > 0) requests.AddAfter(Item(), options.node_recount_delay);
  }

  // False when a write was refused: the recount comes back after a backoff.
  bool Recount() {
    std::vector<json::object> nodes_now = nodes.List();
    std::vector<std::string> names;
    std::vector<api::StringMap> labels;
    names.reserve(nodes_now.size());
    labels.reserve(nodes_now.size());
    for (const json::object& n : nodes_now) {
      names.push_back(api::MetaString(n, "name"));
      labels.push_back(LabelsOf(n));
    }
    std::vector<core::TopologyNode> topology_nodes;
    topology_nodes.reserve(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      topology_nodes.push_back({static_cast<int>(i), &names[i], &labels[i]});
    }
    std::map<std::string, std::shared_ptr<const api::HyperNode>> objects;
    std::map<std::string, int64_t> stored;
    for (const json::object& h : hypernodes.List()) {
      absl::StatusOr<api::HyperNode> decoded = api::DecodeHyperNode(json::value(h));
      if (!decoded.ok()) continue;
      const std::string name = decoded->meta.name;
      stored[name] = StoredCount(h);
      objects.emplace(name, std::make_shared<const api::HyperNode>(*std::move(decoded)));
    }
    const core::HyperNodeTopology topology = core::HyperNodeTopology::Build(objects, topology_nodes);
    bool all_written = true;
    for (const auto& [name, count] : stored) {
      const core::HyperNodeInfo* info = topology.Find(name);
      if (info == nullptr) continue;
      const auto want = static_cast<int64_t>(info->nodes.size());
      if (want == count) continue;
      const json::object patch{{"status", json::object{{"nodeCount", want}}}};
      absl::Status patched =
          client.PatchWithoutResult(client::HyperNodes(), "", name, client::PatchType::kMerge,
                                    json::serialize(patch), "status");
      if (!patched.ok() && !absl::IsNotFound(patched)) {
        std::fprintf(stderr, "hypernode controller: cannot write HyperNode %s's nodeCount: %s\n",
                     name.c_str(), std::string(patched.message()).c_str());
        all_written = false;
      }
    }
    return all_written;
  }
};

}  // namespace

absl::Status HyperNodeController::Start(std::chrono::milliseconds sync_timeout) {
  HyperNodeController& s = *this;
  client::InformerHandlers hn;
  hn.on_add = [&s](const json::object&) {
    ++s.hypernode_count;
    s.RecountNow();
  };
  hn.on_update = [&s](const json::object& old_object, const json::object& object) {
    // Its own status write comes back here: only a new spec changes a count.
    if (api::ObjectAt(old_object, "spec") == nullptr || api::ObjectAt(object, "spec") == nullptr ||
        *api::ObjectAt(old_object, "spec") != *api::ObjectAt(object, "spec") ||
        StoredCount(old_object) != StoredCount(object)) {
      s.RecountNow();
    }
  };
  hn.on_delete = [&s](const json::object&) {
    --s.hypernode_count;
    s.RecountNow();
  };
  s.hypernodes.AddHandlers(std::move(hn));
  client::InformerHandlers nodes;
  nodes.on_add = [&s](const json::object&) { s.RecountSoon(); };
  nodes.on_update = [&s](const json::object& old_node, const json::object& node) {
    if (!SameLabels(old_node, node)) s.RecountSoon();
  };
  nodes.on_delete = [&s](const json::object&) { s.RecountSoon(); };
  s.nodes.AddHandlers(std::move(nodes));
  const auto deadline = std::chrono::steady_clock::now() + sync_timeout;
  if (absl::Status started = StartInformers("hypernode controller", {&s.nodes, &s.hypernodes},
                                            deadline, sync_timeout);
      !started.ok()) {
    Stop();
    return started;
  }
  if (absl::Status started = s.requests.Start(); !started.ok()) {
    Stop();
    return started;
  }
  s.RecountNow();
  return absl::OkStatus();
}

void HyperNodeController::Stop() {
  hypernodes.Stop();
  nodes.Stop();
  requests.Stop();
}

bool HyperNodeController::WaitIdle(std::chrono::milliseconds timeout) {
  return requests.WaitIdle(timeout);
}

std::unique_ptr<Controller> NewHyperNodeController(client::Client& client,
                                                   HyperNodeControllerOptions options) {
  return std::make_unique<HyperNodeController>(client, options);
}

}  // namespace muster::controller
