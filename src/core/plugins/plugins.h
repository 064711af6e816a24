#pragma once

// The scheduling plugins, each in the file of its name (gang.cc, binpack.cc, ...). Each registers
// its callbacks on a Session in OnSessionOpen; the registry (registry.cc, framework/registry.h)
// builds them by name from volcano-scheduler.conf.

#include <memory>

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {

std::unique_ptr<Plugin> NewGangPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewPriorityPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewConformancePlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewDrfPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewProportionPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewPredicatesPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewNodeOrderPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewBinpackPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewOvercommitPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewSlaPlugin(const PluginOption& opt);

}  // namespace muster::core
