#pragma once

// What the job plugins' files (job_plugins.cc, ssh_mpi_plugins.cc) share: reading a task's
// template and editing a pod being created. Not for other users.
//
// Thread-safety: all functions are pure.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "api/json_access.h"
#include "boost/json/object.hpp"
#include "controller/job.h"
#include "controller/job_plugins.h"

namespace muster::controller::plugin_support {

// The task template's spec.<key> (hostname, subdomain); "" when absent.
inline std::string TemplateSpecString(const TaskSpec& task, std::string_view key) {
  const boost::json::value* spec = task.pod_template.if_contains("spec");
  if (spec == nullptr || !spec->is_object()) return {};
  return api::StringAt(spec->get_object(), key);
}

// Calls `fn` on every container, then (with `include_init`) every init container, of a pod.
template <class Fn>
void ForEachContainer(boost::json::object& pod, bool include_init, Fn fn) {
  boost::json::object& spec = api::EnsureObject(pod, "spec");
  for (std::string_view key : {"containers", "initContainers"}) {
    if (key == "initContainers" && !include_init) continue;
    boost::json::value* list = spec.if_contains(key);
    if (list == nullptr || !list->is_array()) continue;
    for (boost::json::value& c : list->get_array()) {
      if (c.is_object()) fn(c.get_object());
    }
  }
}

inline void AddEnv(boost::json::object& container, std::string_view name, std::string_view value) {
  api::EnsureArray(container, "env")
      .push_back(boost::json::object{{"name", name}, {"value", value}});
}

// Adds {name, containerPort: port} to the container's ports unless one has that containerPort.
inline void OpenContainerPort(boost::json::object& container, std::string_view name, int port) {
  if (const boost::json::value* ports = container.if_contains("ports");
      ports != nullptr && ports->is_array()) {
    for (const boost::json::value& p : ports->get_array()) {
      const boost::json::value* cp =
          p.is_object() ? p.get_object().if_contains("containerPort") : nullptr;
      if (cp != nullptr && cp->is_number() && cp->to_number<double>() == port) return;
    }
  }
  api::EnsureArray(container, "ports")
      .push_back(boost::json::object{{"name", name}, {"containerPort", port}});
}

// The problem a plugin reports for arguments that did not parse (Volcano's klog line).
inline std::string ParseProblem(std::string_view plugin, const absl::Status& status) {
  std::string text = "plugin ";
  text.append(plugin).append(" flagset parse failed, err: ");
  text.append(status.message().data(), status.message().size());
  return text;
}

}  // namespace muster::controller::plugin_support

namespace muster::controller {

// ssh_mpi_plugins.cc, for MakePlugin.
PluginBuild MakeSshPlugin(const std::vector<std::string>& arguments);
PluginBuild MakeMpiPlugin(const std::vector<std::string>& arguments);

}  // namespace muster::controller
