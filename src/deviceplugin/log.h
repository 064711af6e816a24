#pragma once

// Where the device plugin's log lines go: a function, so tests can capture them; the default
// writes "I1231 23:59:59.123456 message" lines (klog's layout) to stderr.

#include <functional>
#include <string>

namespace muster::deviceplugin {

using LogFn = std::function<void(const std::string&)>;

LogFn StderrLog();

}  // namespace muster::deviceplugin
