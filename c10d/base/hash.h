// FNV-1a, 64 bits: the checksums of the library's file formats and framed store values, and the
// fingerprints ranks compare. Catches corruption and mismatch, not an adversary.
#pragma once

#include <cstddef>
#include <cstdint>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

constexpr uint64_t kFnv1aBasis = 14695981039346656037ull;
// A digit short of FNV's basis: what the optimizer-state format and the layers' fingerprints have
// used since their first version, kept so that their files and values stay as they were.
constexpr uint64_t kFnv1aShortBasis = 1469598103934665603ull;

class Fnv1a {
 public:
  explicit constexpr Fnv1a(uint64_t basis = kFnv1aBasis) : h_(basis) {}
  Fnv1a& add(const void* data, size_t n) {
    const auto* b = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 1099511628211ull;
    return *this;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_;
};

inline uint64_t fnv1a(const void* data, size_t n, uint64_t basis = kFnv1aBasis) {
  return Fnv1a(basis).add(data, n).value();
}

C10D_NAMESPACE_END
}  // namespace c10d
