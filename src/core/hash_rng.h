// core/hash_rng.h: stateless, seeded values: value(seed, i) depends only on (seed, i), so CPU,
// CUDA and Python (python/recops/testing.py) generate identical inputs for a case.
#pragma once

#include <cstdint>

namespace recops::core {

// SplitMix64 finaliser over seed and index.
constexpr uint64_t hash64(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 53 random bits.
constexpr double uniform01(uint64_t seed, uint64_t i) {
  return static_cast<double>(hash64(seed, i) >> 11) * (1.0 / 9007199254740992.0);
}

// Uniform in [lo, hi).
constexpr double uniform(uint64_t seed, uint64_t i, double lo, double hi) {
  return lo + (hi - lo) * uniform01(seed, i);
}

// Integer uniform in [lo, hi] (inclusive), hi >= lo.
constexpr int64_t uniform_int(uint64_t seed, uint64_t i, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1u;
  return lo + static_cast<int64_t>(span == 0 ? hash64(seed, i) : hash64(seed, i) % span);
}

}  // namespace recops::core
