#include "deviceplugin/log.h"

#include <sys/time.h>

#include <cstdio>
#include <ctime>
#include <mutex>

namespace muster::deviceplugin {

LogFn StderrLog() {
  return [](const std::string& message) {
    static std::mutex mu;
    timeval now{};
    gettimeofday(&now, nullptr);
    tm local{};
    localtime_r(&now.tv_sec, &local);
    std::lock_guard<std::mutex> lock(mu);
    std::fprintf(stderr, "I%02d%02d %02d:%02d:%02d.%06ld %s\n", local.tm_mon + 1, local.tm_mday,
                 local.tm_hour, local.tm_min, local.tm_sec, static_cast<long>(now.tv_usec),
                 message.c_str());
    std::fflush(stderr);
  };
}

}  // namespace muster::deviceplugin
