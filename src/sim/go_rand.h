#pragma once

// Go's math/rand (the seeded source, rngSource, and the Rand methods the reference simulator
// calls), reproduced draw for draw. The FGD paper's simulator (KSS) seeds Go's global generator
// with the run's seed and uses it to shuffle the pods, to inflate the workload and to give the
// nodes their tie-breaking rank; with the same stream muster replays exactly the same runs, so
// its results can be compared with the published ones seed by seed.
//
// The generator is an additive lagged Fibonacci generator, x[n] = x[n-607] + x[n-273] mod 2^64
// (Mitchell and Reeds). Go seeds it by XOR-ing a Park-Miller sequence into a fixed "cooked"
// state: the generator's own state after 7.8e12 steps from seed 1. That state is computed here
// once per process by jumping ahead (x^N mod the characteristic polynomial, in milliseconds)
// rather than copied as a table; go_rand_test.cc checks the outputs against values Go prints.

#include <cstdint>
#include <vector>

#include "core/plugins/gpuplacement/placement.h"

namespace muster::sim {

class GoRand : public core::RandomSource {
 public:
  // rand.New(rand.NewSource(seed)); also what rand.Seed(seed) does to the global generator.
  explicit GoRand(int64_t seed);

  uint64_t Uint64();
  int64_t Int63();
  uint32_t Uint32();
  int32_t Int31();
  int64_t Int();  // on 64-bit platforms
  int64_t Int63n(int64_t n);
  int32_t Int31n(int32_t n);
  // Intn(n) for n > 0 (Int31n for n < 2^31).
  int Intn(int n) override;
  double Float64();
  // rand.Perm(n).
  std::vector<int> Perm(int n);
  // rand.Shuffle(n, swap) with Go's Lemire-style bounded draw; calls swap(i, j).
  template <typename Swap>
  void Shuffle(int64_t n, Swap swap) {
    int64_t i = n - 1;
    for (; i > (int64_t{1} << 31) - 2; --i) swap(i, Int63n(i + 1));
    for (; i > 0; --i) swap(i, static_cast<int64_t>(BoundedInt31(static_cast<int32_t>(i + 1))));
  }

 private:
  // Go's unexported int31n: Lemire's multiply-shift with rejection.
  int32_t BoundedInt31(int32_t n);

  static constexpr int kLen = 607;
  static constexpr int kTap = 273;
  int tap_ = 0;
  int feed_ = kLen - kTap;
  uint64_t vec_[kLen];
};

}  // namespace muster::sim
