#include "common/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace muster::common {
namespace {

TEST(ParallelForTest, CallsEveryIndexOnceAndReturnsAfterTheLast) {
  for (size_t threads : {0u, 1u, 7u}) {
    WorkerPool pool(threads);
    for (size_t n : {0u, 1u, 2u, 7u, 100u}) {
      std::vector<std::atomic<int>> calls(n);
      pool.ParallelFor(n, [&](size_t i) { calls[i]++; });
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(calls[i].load(), 1) << "threads=" << threads << " n=" << n << " i=" << i;
      }
    }
  }
}

TEST(ParallelForTest, RunsBlockingCallsSideBySideUpToTheLimit) {
  // Each call waits until `limit` calls are in flight at once (or gives up after a long while):
  // with fewer threads than that they could never all be in flight.
  constexpr size_t kLimit = 4;
  std::mutex mu;
  std::condition_variable cv;
  size_t in_flight = 0, most = 0;
  std::set<std::thread::id> threads;
  WorkerPool pool(kLimit - 1);
  pool.ParallelFor(kLimit, [&](size_t) {
    std::unique_lock lock(mu);
    threads.insert(std::this_thread::get_id());
    most = std::max(most, ++in_flight);
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return most == kLimit; });
    --in_flight;
  });
  EXPECT_EQ(most, kLimit);
  EXPECT_EQ(threads.size(), kLimit);
  EXPECT_TRUE(threads.contains(std::this_thread::get_id()));  // the caller works too
}

TEST(ParallelForTest, CallersSharingAPoolEachGetEveryCallOfTheirOwn) {
  WorkerPool pool(3);
  std::vector<std::thread> callers;
  std::vector<std::vector<int>> calls(6, std::vector<int>(50, 0));
  for (size_t c = 0; c < calls.size(); ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 20; ++round) {
        pool.ParallelFor(50, [&, c](size_t i) { ++calls[c][i]; });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (const auto& mine : calls) {
    for (int n : mine) EXPECT_EQ(n, 20);
  }
}

}  // namespace
}  // namespace muster::common
