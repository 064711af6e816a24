#include "scheduler/backoff.h"

#include <gtest/gtest.h>

namespace muster::scheduler {
namespace {

using std::chrono::milliseconds;

TEST(GangBackoffTest, WaitDoublesUpToTheCap) {
  GangBackoff b(milliseconds(100), milliseconds(350));
  auto t0 = GangBackoff::Clock::now();
  EXPECT_FALSE(b.HeldBack("ns/a", t0));
  b.Failed("ns/a", t0);
  EXPECT_EQ(b.Delay("ns/a"), milliseconds(100));
  EXPECT_TRUE(b.HeldBack("ns/a", t0 + milliseconds(99)));
  EXPECT_FALSE(b.HeldBack("ns/a", t0 + milliseconds(100)));
  b.Failed("ns/a", t0);
  EXPECT_EQ(b.Delay("ns/a"), milliseconds(200));
  b.Failed("ns/a", t0);
  EXPECT_EQ(b.Delay("ns/a"), milliseconds(350));
  b.Failed("ns/a", t0);
  EXPECT_EQ(b.Delay("ns/a"), milliseconds(350));
  EXPECT_TRUE(b.HeldBack("ns/a", t0 + milliseconds(349)));
  // Other gangs are unaffected.
  EXPECT_FALSE(b.HeldBack("ns/b", t0));
}

TEST(GangBackoffTest, ProgressOrAHelpfulChangeEndsTheWait) {
  GangBackoff b(milliseconds(1000), milliseconds(10000));
  auto t0 = GangBackoff::Clock::now();
  b.Failed("ns/a", t0);
  b.Failed("ns/a", t0);
  b.Failed("ns/b", t0);
  b.Reset("ns/a");
  EXPECT_FALSE(b.HeldBack("ns/a", t0));
  EXPECT_TRUE(b.HeldBack("ns/b", t0));
  // After a reset the wait starts again from the initial delay.
  b.Failed("ns/a", t0);
  EXPECT_EQ(b.Delay("ns/a"), milliseconds(1000));
  b.Succeeded("ns/a");
  EXPECT_EQ(b.size(), 1u);
  b.ResetAll();
  EXPECT_FALSE(b.HeldBack("ns/b", t0));
  EXPECT_EQ(b.size(), 0u);
}

}  // namespace
}  // namespace muster::scheduler
