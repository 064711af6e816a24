#include "sim/go_rand.h"

#include <array>
#include <vector>

namespace muster::sim {
namespace {

constexpr int kLen = 607;
constexpr int kTap = 273;
constexpr uint64_t kMask63 = (uint64_t{1} << 63) - 1;
constexpr int32_t kInt32Max = 2147483647;  // 2^31 - 1

// Park-Miller minimal standard generator, x * 48271 mod (2^31 - 1), by Schrage's method.
int32_t SeedRand(int32_t x) {
  constexpr int32_t kA = 48271, kQ = 44488, kR = 3399;
  int32_t hi = x / kQ, lo = x % kQ;
  x = kA * lo - kR * hi;
  if (x < 0) x += kInt32Max;
  return x;
}

// Polynomials over Z/2^64 modulo P(x) = x^607 - x^334 - 1, the characteristic polynomial of
// y[t] = y[t-607] + y[t-273].
using Poly = std::vector<uint64_t>;

Poly MulMod(const Poly& a, const Poly& b) {
  std::vector<uint64_t> r(2 * kLen - 1, 0);
  for (int i = 0; i < kLen; ++i) {
    if (a[i] == 0) continue;
    for (int j = 0; j < kLen; ++j) r[i + j] += a[i] * b[j];
  }
  for (int d = 2 * kLen - 2; d >= kLen; --d) {  // x^d = x^(d-607) * (x^334 + 1)
    uint64_t c = r[d];
    if (c == 0) continue;
    r[d] = 0;
    r[d - kLen] += c;
    r[d - kTap] += c;
  }
  r.resize(kLen);
  return r;
}

Poly MulX(const Poly& a) {
  Poly r(kLen, 0);
  uint64_t top = a[kLen - 1];
  for (int i = kLen - 1; i > 0; --i) r[i] = a[i - 1];
  r[0] += top;
  r[kLen - kTap] += top;
  return r;
}

// The generator's state after 7.8e12 steps from Go's seed-1 start (gen_cooked.go's srand(1):
// Park-Miller words combined with shifts of 20 and 10), as laid out in its 607-slot ring.
std::array<uint64_t, kLen> ComputeCooked() {
  uint64_t start[kLen];
  int32_t x = 1;
  for (int i = -20; i < kLen; ++i) {
    x = SeedRand(x);
    if (i >= 0) {
      int64_t u = static_cast<int64_t>(x) << 20;
      x = SeedRand(x);
      u ^= static_cast<int64_t>(x) << 10;
      x = SeedRand(x);
      u ^= static_cast<int64_t>(x);
      start[i] = static_cast<uint64_t>(u);
    }
  }
  // The value produced at step s (s <= 0 for the start) lives in slot (334 - s) mod 607.
  auto slot = [](int64_t s) {
    int64_t v = (kLen - kTap - s) % kLen;
    return static_cast<int>(v < 0 ? v + kLen : v);
  };
  std::vector<uint64_t> base(kLen);
  for (int j = 0; j < kLen; ++j) base[j] = start[slot(-606 + j)];
  // y[-606 + k] = sum_i c_i base[i] with c = x^k mod P. The last 607 values of N steps are
  // k = N .. N + 606.
  constexpr uint64_t kSteps = 7'800'000'000'000ULL;
  Poly result(kLen, 0), power(kLen, 0);
  result[0] = 1;
  power[1] = 1;
  for (uint64_t e = kSteps; e != 0; e >>= 1) {
    if (e & 1) result = MulMod(result, power);
    if (e > 1) power = MulMod(power, power);
  }
  std::array<uint64_t, kLen> cooked{};
  for (int j = 0; j < kLen; ++j) {
    uint64_t y = 0;
    for (int i = 0; i < kLen; ++i) y += result[i] * base[i];
    cooked[slot(static_cast<int64_t>(kSteps) - 606 + j)] = y;
    result = MulX(result);
  }
  return cooked;
}

const std::array<uint64_t, kLen>& Cooked() {
  static const std::array<uint64_t, kLen> cooked = ComputeCooked();  // thread-safe, once
  return cooked;
}

}  // namespace

GoRand::GoRand(int64_t seed) {
  const auto& cooked = Cooked();
  seed %= kInt32Max;
  if (seed < 0) seed += kInt32Max;
  if (seed == 0) seed = 89482311;
  int32_t x = static_cast<int32_t>(seed);
  for (int i = -20; i < kLen; ++i) {
    x = SeedRand(x);
    if (i >= 0) {
      int64_t u = static_cast<int64_t>(x) << 40;
      x = SeedRand(x);
      u ^= static_cast<int64_t>(x) << 20;
      x = SeedRand(x);
      u ^= static_cast<int64_t>(x);
      vec_[i] = static_cast<uint64_t>(u) ^ cooked[i];
    }
  }
}

uint64_t GoRand::Uint64() {
  if (--tap_ < 0) tap_ += kLen;
  if (--feed_ < 0) feed_ += kLen;
  uint64_t x = vec_[feed_] + vec_[tap_];
  vec_[feed_] = x;
  return x;
}

int64_t GoRand::Int63() { return static_cast<int64_t>(Uint64() & kMask63); }
uint32_t GoRand::Uint32() { return static_cast<uint32_t>(Int63() >> 31); }
int32_t GoRand::Int31() { return static_cast<int32_t>(Int63() >> 32); }
int64_t GoRand::Int() { return Int63(); }

int64_t GoRand::Int63n(int64_t n) {
  if ((n & (n - 1)) == 0) return Int63() & (n - 1);
  int64_t max = static_cast<int64_t>((uint64_t{1} << 63) - 1 - (uint64_t{1} << 63) % static_cast<uint64_t>(n));
  int64_t v = Int63();
  while (v > max) v = Int63();
  return v % n;
}

int32_t GoRand::Int31n(int32_t n) {
  if ((n & (n - 1)) == 0) return Int31() & (n - 1);
  int32_t max = static_cast<int32_t>((uint32_t{1} << 31) - 1 - (uint32_t{1} << 31) % static_cast<uint32_t>(n));
  int32_t v = Int31();
  while (v > max) v = Int31();
  return v % n;
}

int GoRand::Intn(int n) { return static_cast<int>(Int31n(static_cast<int32_t>(n))); }

double GoRand::Float64() {
  for (;;) {
    double f = static_cast<double>(Int63()) / 9223372036854775808.0;
    if (f < 1) return f;
  }
}

std::vector<int> GoRand::Perm(int n) {
  std::vector<int> m(n);
  for (int i = 0; i < n; ++i) {
    int j = Intn(i + 1);
    m[i] = m[j];
    m[j] = i;
  }
  return m;
}

int32_t GoRand::BoundedInt31(int32_t n) {
  uint32_t v = Uint32();
  uint64_t prod = static_cast<uint64_t>(v) * static_cast<uint64_t>(n);
  uint32_t low = static_cast<uint32_t>(prod);
  if (low < static_cast<uint32_t>(n)) {
    uint32_t thresh = static_cast<uint32_t>(-n) % static_cast<uint32_t>(n);
    while (low < thresh) {
      v = Uint32();
      prod = static_cast<uint64_t>(v) * static_cast<uint64_t>(n);
      low = static_cast<uint32_t>(prod);
    }
  }
  return static_cast<int32_t>(prod >> 32);
}

}  // namespace muster::sim
