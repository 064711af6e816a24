// HyperNodes resolved to nodes (hypernodes.h). Follows Volcano's
// pkg/scheduler/api/hyper_node_info.go and pkg/util/hypernode/util.go.

#include "core/hypernodes.h"

#include <algorithm>
#include <functional>
#include <regex>
#include <set>

#include "api/selector.h"
#include "fmt/format.h"

namespace muster::core {
namespace {

struct Pending {
  const api::HyperNode* obj = nullptr;
  std::vector<std::optional<std::regex>> regexes;  // by member
  std::vector<std::string> children;               // HyperNode members, resolved
  std::string parent;
  bool left_out = false;
};

// Go's regexp.MatchString: a match anywhere in the text.
bool RegexMatches(const std::regex& re, const std::string& text) {
  return std::regex_search(text, re);
}

}  // namespace

HyperNodeTopology HyperNodeTopology::Build(
    const std::map<std::string, std::shared_ptr<const api::HyperNode>>& objects,
    const std::vector<TopologyNode>& nodes) {
  HyperNodeTopology out;
  std::map<std::string, Pending> pending;
  for (const auto& [name, obj] : objects) {
    Pending p;
    p.obj = obj.get();
    bool ok = true;
    for (size_t m = 0; m < obj->spec.members.size(); ++m) {
      const auto& sel = obj->spec.members[m].selector;
      p.regexes.emplace_back();
      if (sel.regex_match && !sel.regex_match->pattern.empty()) {
        try {
          p.regexes.back().emplace(sel.regex_match->pattern, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          out.problems_.push_back(fmt::format(
              "HyperNode {}: spec.members[{}].selector.regexMatch.pattern \"{}\" is invalid: {}",
              name, m, sel.regex_match->pattern, e.what()));
          ok = false;
        }
      }
    }
    if (ok) pending.emplace(name, std::move(p));
  }
  // HyperNode members, and each member's one parent (the first by name that claims it).
  for (auto& [name, p] : pending) {
    std::set<std::string> kids;
    for (size_t m = 0; m < p.obj->spec.members.size(); ++m) {
      const auto& member = p.obj->spec.members[m];
      if (member.type != "HyperNode") continue;
      if (member.selector.exact_match) {
        if (pending.count(member.selector.exact_match->name)) {
          kids.insert(member.selector.exact_match->name);
        }
      } else if (p.regexes[m]) {
        for (const auto& [other, unused] : pending) {
          if (RegexMatches(*p.regexes[m], other)) kids.insert(other);
        }
      }
    }
    for (const std::string& kid : kids) {
      Pending& child = pending.at(kid);
      if (!child.parent.empty()) {
        out.problems_.push_back(fmt::format(
            "HyperNode {} already has a parent {}, and cannot set another parent {}", kid,
            child.parent, name));
        continue;
      }
      child.parent = name;
      p.children.push_back(kid);
    }
  }
  // With one parent each, a cycle is a parent chain that comes back to where it started.
  for (auto& [name, p] : pending) {
    std::set<std::string> seen = {name};
    for (std::string at = p.parent; !at.empty(); at = pending.at(at).parent) {
      if (at == name) {
        p.left_out = true;
        out.problems_.push_back(fmt::format(
            "HyperNode {}: cyclic dependency detected: it is its own ancestor", name));
        break;
      }
      if (!seen.insert(at).second) break;  // a cycle above, not through this one
    }
  }
  // Kept HyperNodes, by tier and name.
  std::vector<std::string> kept;
  for (const auto& [name, p] : pending) {
    if (!p.left_out) kept.push_back(name);
  }
  std::stable_sort(kept.begin(), kept.end(), [&](const std::string& a, const std::string& b) {
    return pending.at(a).obj->spec.tier < pending.at(b).obj->spec.tier;
  });
  int max_id = -1;
  for (const TopologyNode& n : nodes) max_id = std::max(max_id, n.id);
  for (const std::string& name : kept) {
    HyperNodeInfo h;
    h.index = static_cast<int>(out.hypernodes_.size());
    h.name = name;
    h.tier = pending.at(name).obj->spec.tier;
    h.tier_name = pending.at(name).obj->spec.tier_name;
    h.in.assign(max_id + 1, 0);
    out.by_name_[name] = h.index;
    out.max_tier_ = std::max(out.max_tier_, h.tier);
    if (!h.tier_name.empty()) out.tier_names_.emplace(h.tier_name, h.tier);
    out.hypernodes_.push_back(std::move(h));
  }
  for (HyperNodeInfo& h : out.hypernodes_) {
    const Pending& p = pending.at(h.name);
    if (!p.parent.empty() && out.by_name_.count(p.parent)) h.parent = out.by_name_.at(p.parent);
    for (const std::string& kid : p.children) {
      if (out.by_name_.count(kid)) h.children.push_back(out.by_name_.at(kid));
    }
    // Node members.
    for (size_t m = 0; m < p.obj->spec.members.size(); ++m) {
      const auto& member = p.obj->spec.members[m];
      if (member.type != "Node") continue;
      const auto& sel = member.selector;
      for (const TopologyNode& n : nodes) {
        bool match = false;
        if (sel.exact_match) {
          match = *n.name == sel.exact_match->name;
        } else if (p.regexes[m]) {
          match = RegexMatches(*p.regexes[m], *n.name);
        } else if (sel.label_match) {
          match = api::MatchesLabelSelector(*sel.label_match, *n.labels);
        }
        if (match) h.in[n.id] = 1;
      }
    }
  }
  // Nodes of member HyperNodes, lowest tier first (no cycles are left).
  std::function<void(int)> gather = [&](int i) {
    for (int kid : out.hypernodes_[i].children) {
      gather(kid);
      for (size_t id = 0; id < out.hypernodes_[kid].in.size(); ++id) {
        if (out.hypernodes_[kid].in[id]) out.hypernodes_[i].in[id] = 1;
      }
    }
  };
  for (HyperNodeInfo& h : out.hypernodes_) {
    if (h.parent < 0) gather(h.index);
  }
  if (!out.hypernodes_.empty()) {
    HyperNodeInfo top;
    top.index = static_cast<int>(out.hypernodes_.size());
    top.name = "<cluster-top-hypernode>";
    top.tier = out.max_tier_ + 1;
    top.virtual_top = true;
    top.in.assign(max_id + 1, 0);
    for (const TopologyNode& n : nodes) top.in[n.id] = 1;
    for (HyperNodeInfo& h : out.hypernodes_) {
      if (h.parent < 0) {
        h.parent = top.index;
        top.children.push_back(h.index);
      }
    }
    out.hypernodes_.push_back(std::move(top));
  }
  for (HyperNodeInfo& h : out.hypernodes_) {
    for (size_t id = 0; id < h.in.size(); ++id) {
      if (h.in[id]) h.nodes.push_back(static_cast<int>(id));
    }
  }
  return out;
}

const HyperNodeInfo* HyperNodeTopology::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &hypernodes_[it->second];
}

std::optional<int> HyperNodeTopology::TierByName(const std::string& tier_name) const {
  auto it = tier_names_.find(tier_name);
  if (it == tier_names_.end()) return std::nullopt;
  return it->second;
}

}  // namespace muster::core
