#include "sim/go_rand.h"

#include <numeric>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::sim {
namespace {

using ::testing::ElementsAre;

// Values Go prints (go1.20, math/rand): rand.New(rand.NewSource(1)).Int63() twice, and
// rand.Intn(100) ten times from seed 1 (the Go tour's sequence).
TEST(GoRandTest, SeedOneMatchesGo) {
  GoRand r(1);
  EXPECT_EQ(r.Int63(), 5577006791947779410);
  EXPECT_EQ(r.Int63(), 8674665223082153551);
  GoRand s(1);
  std::vector<int> got;
  for (int i = 0; i < 10; ++i) got.push_back(s.Intn(100));
  EXPECT_THAT(got, ElementsAre(81, 87, 47, 59, 81, 18, 25, 40, 56, 0));
}

TEST(GoRandTest, SeedsReduceModuloTwoToTheThirtyOneMinusOne) {
  // Go reduces the seed mod 2^31-1 and maps 0 to 89482311: these streams coincide.
  GoRand a(0), b(89482311), c(2147483647);
  for (int i = 0; i < 5; ++i) {
    int64_t x = a.Int63();
    EXPECT_EQ(x, b.Int63());
    EXPECT_EQ(x, c.Int63());
  }
}

TEST(GoRandTest, PermAndShuffleArePermutationsAndRepeatable) {
  GoRand a(42), b(42);
  std::vector<int> p = a.Perm(1000);
  EXPECT_EQ(p, b.Perm(1000));
  std::vector<int> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  std::vector<int> v = iota;
  a.Shuffle(static_cast<int64_t>(v.size()), [&](int64_t i, int64_t j) { std::swap(v[i], v[j]); });
  EXPECT_NE(v, iota);
  std::sort(v.begin(), v.end());
  EXPECT_EQ(v, iota);
}

TEST(GoRandTest, BoundedDrawsStayInRange) {
  GoRand r(7);
  std::set<int> seen;
  for (int i = 0; i < 2000; ++i) {
    int x = r.Intn(7);
    ASSERT_GE(x, 0);
    ASSERT_LT(x, 7);
    seen.insert(x);
    double f = r.Float64();
    ASSERT_GE(f, 0);
    ASSERT_LT(f, 1);
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(r.Int63n(int64_t{1} << 40) >> 40, 0);
}

}  // namespace
}  // namespace muster::sim
