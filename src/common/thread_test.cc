#include "common/thread.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::common {
namespace {

// The address space limit set just above what the process maps leaves no room for a new
// thread's stack (8 MiB), so pthread_create fails as it does at the thread or PID limit.
TEST(StartThreadTest, AThreadTheSystemCannotCreateIsAnErrorNotTheEndOfTheProcess) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "the sanitizers map their own memory past any address space limit";
#endif
#endif
  std::ifstream statm("/proc/self/statm");
  unsigned long pages = 0;
  ASSERT_TRUE(statm >> pages);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &old), 0);
  const rlim_t mapped = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
  rlimit tight{mapped + (rlim_t{2} << 20), old.rlim_max};
  std::thread thread;
  std::atomic<bool> ran{false};
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &tight), 0);
  absl::Status refused = StartThread(thread, "the test", [&] { ran = true; });
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &old), 0);

  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_THAT(refused.message(), testing::HasSubstr("cannot start a thread for the test: "));
  EXPECT_FALSE(thread.joinable());
  EXPECT_FALSE(ran);

  // With room again, the same call starts it.
  ASSERT_TRUE(StartThread(thread, "the test", [&] { ran = true; }).ok());
  thread.join();
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace muster::common
