#include "controller/work_queue.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;

WorkItem Item(std::string key, std::string event) {
  WorkItem item;
  item.key = std::move(key);
  item.request.event = std::move(event);
  return item;
}

TEST(WorkQueuesTest, OneKeysItemsRunInOrderAndDuplicatesCollapse) {
  std::mutex mu;
  std::vector<std::string> seen;
  std::atomic<bool> release{false};
  WorkQueues queues({2, 1ms, 10ms}, [&](const WorkItem& item, int) {
    while (item.request.event == "first" && !release) std::this_thread::sleep_for(1ms);
    std::lock_guard lock(mu);
    seen.push_back(item.request.event);
    return true;
  });
  ASSERT_TRUE(queues.Start().ok());
  queues.Add(Item("ns/a", "first"));
  std::this_thread::sleep_for(20ms);  // "first" is being handled
  queues.Add(Item("ns/a", "second"));
  queues.Add(Item("ns/a", "second"));  // still waiting: collapses
  queues.Add(Item("ns/a", "third"));
  release = true;
  ASSERT_TRUE(queues.WaitIdle(5s));
  std::lock_guard lock(mu);
  EXPECT_THAT(seen, ElementsAre("first", "second", "third"));
}

TEST(WorkQueuesTest, TheDepthObserverCountsItemsWaitingForAWorker) {
  std::atomic<int> depth{0};
  std::atomic<int> failures_left{1};
  WorkQueues queues({2, 1ms, 10ms}, [&](const WorkItem& item, int) {
    return item.request.event != "flaky" || failures_left-- <= 0;
  });
  queues.SetDepthObserver([&](int delta) { depth += delta; });
  queues.Add(Item("ns/a", "x"));
  queues.Add(Item("ns/a", "x"));  // a duplicate waits as one
  queues.Add(Item("ns/b", "y"));
  queues.AddAfter(Item("ns/c", "later"), 1h);  // scheduled, not yet waiting for a worker
  EXPECT_EQ(depth, 2);
  queues.Add(Item("ns/d", "flaky"));  // fails once: back after a backoff, then handled
  EXPECT_EQ(depth, 3);
  ASSERT_TRUE(queues.Start().ok());
  ASSERT_TRUE(queues.WaitIdle(5s));
  EXPECT_EQ(depth, 0);
  queues.Stop();
}

TEST(WorkQueuesTest, FailedItemsComeBackWithTheirRetryCount) {
  std::mutex mu;
  std::vector<int> retries;
  WorkQueues queues({1, 1ms, 10ms}, [&](const WorkItem&, int n) {
    std::lock_guard lock(mu);
    retries.push_back(n);
    return n >= 3;
  });
  ASSERT_TRUE(queues.Start().ok());
  queues.Add(Item("ns/a", "x"));
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard lock(mu);
      if (retries.size() == 4) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(queues.WaitIdle(5s));
  std::lock_guard lock(mu);
  EXPECT_THAT(retries, ElementsAre(0, 1, 2, 3));
}

TEST(WorkQueuesTest, ScheduledItemsWaitTheirTurnAndKeepTheEarliestSchedule) {
  std::atomic<int> runs{0};
  WorkQueues queues({1, 1ms, 10ms}, [&](const WorkItem&, int) {
    ++runs;
    return true;
  });
  ASSERT_TRUE(queues.Start().ok());
  WorkItem ttl;
  ttl.key = "ns/a";
  ttl.kind = WorkItem::Kind::kTtl;
  queues.AddAfter(ttl, 150ms);
  queues.AddAfter(ttl, 10s);  // later than the pending schedule: ignored
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(runs, 0);
  for (int i = 0; i < 100 && runs == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(runs, 1);
  queues.Stop();
}

// An item rescheduled earlier while the worker waits for its old time: the worker wakes for
// the new time (under AddressSanitizer this read the erased entry's time after it was freed).
TEST(WorkQueuesTest, AnItemRescheduledEarlierWhileTheWorkerWaitsRunsAtTheNewTime) {
  std::atomic<int> runs{0};
  WorkQueues queues({1, 1ms, 10ms}, [&](const WorkItem&, int) {
    ++runs;
    return true;
  });
  ASSERT_TRUE(queues.Start().ok());
  WorkItem ttl;
  ttl.key = "ns/a";
  ttl.kind = WorkItem::Kind::kTtl;
  queues.AddAfter(ttl, 10min);
  std::this_thread::sleep_for(50ms);  // the worker waits for the 10 minutes
  queues.AddAfter(ttl, 20ms);
  for (int i = 0; i < 500 && runs == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(runs, 1);
  queues.Stop();
}

}  // namespace
}  // namespace muster::controller
