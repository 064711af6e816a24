#pragma once

// FNV-1a, 64 bits (the offset basis and prime of the FNV specification): a stable hash of bytes
// for what must come out the same on every run and machine (OpenAPI document ETags, the start of
// a Service's address search). Not for security.
//
// Thread-safety: pure.

#include <cstdint>
#include <string_view>

namespace muster::common {

inline uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char b : bytes) {
    hash ^= b;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace muster::common
