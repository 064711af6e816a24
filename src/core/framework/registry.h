#pragma once

// The registries: the one list of the plugin names and of the action names
// volcano-scheduler.conf may use, each with its builder. The plugin table is in
// plugins/registry.cc, the action table in actions/registry.cc; adding a plugin or an action is
// its file (and test) in that folder, which CMakeLists.txt picks up, and its entry there: the
// builder's declaration and its row.
//
// Volcano keeps both maps in its framework (pkg/scheduler/framework/plugins.go:
// RegisterPluginBuilder / GetPluginBuilder, RegisterAction / GetAction), filled at init by
// pkg/scheduler/plugins/factory.go and pkg/scheduler/actions/factory.go. Here the framework (the
// conf parser, which checks names against these lists, and the session, which builds what the
// conf names) sees only these declarations: nothing under framework/ includes a plugin or an
// action header, and the tables, which must name every builder, live with the plugins and the
// actions. The linker joins the two (all of them are in muster_core). Registration at static
// initialisation, as Volcano's init() does, is avoided on purpose: a static library's object
// file that nothing refers to is left out of the link, and its registration with it.

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace muster::core {

class Action;
class Plugin;
struct PluginOption;

// The plugin names a conf may use, in the registry's order (the order error messages list).
std::span<const std::string_view> PluginNames();
// The action names a conf may use, in the registry's order.
std::span<const std::string_view> ActionNames();

// The plugin the option names, or nullptr for a name that the registry does not know (any gpu-*
// name builds the GPU placement plugin, for confs built in code: plugins/registry.cc). Every
// name PluginNames() lists builds a plugin (a static_assert in plugins/registry.cc).
std::unique_ptr<Plugin> NewPlugin(const PluginOption& option);
// The action of that name, or nullptr.
std::unique_ptr<Action> NewAction(const std::string& name);

}  // namespace muster::core
