// tests/cpp/test_util.h: small helpers for the C++ tests (seeded data, offsets, poisoning).
#pragma once

#include <cstring>
#include <vector>

#include "core/hash_rng.h"
#include "recops/recops.h"

namespace recops::testing {

// Fills a CPU tensor with seeded random bits (every dtype: bits are what the jagged ops move).
inline void fill_random_bits(const Tensor& t, uint64_t seed) {
  auto* p = static_cast<uint8_t*>(t.data());
  for (int64_t i = 0; i < t.nbytes(); ++i)
    p[i] = static_cast<uint8_t>(core::hash64(seed, static_cast<uint64_t>(i)));
}

inline void poison(const Tensor& t, uint8_t byte = 0xA5) {
  if (t.nbytes() > 0) std::memset(t.data(), byte, static_cast<size_t>(t.nbytes()));
}

inline bool bytes_equal(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())) == 0);
}

// Offsets tensor (CPU) from lengths.
inline Tensor offsets_from_lengths(const std::vector<int64_t>& lengths, DType dt) {
  Tensor t = Tensor::empty({static_cast<int64_t>(lengths.size()) + 1}, dt);
  int64_t s = 0;
  for (size_t i = 0; i <= lengths.size(); ++i) {
    if (dt == DType::int64)
      t.view().ptr<int64_t>()[i] = s;
    else
      t.view().ptr<int32_t>()[i] = static_cast<int32_t>(s);
    if (i < lengths.size()) s += lengths[i];
  }
  return t;
}

inline std::vector<int64_t> random_lengths(int64_t B, int64_t max_len, uint64_t seed) {
  std::vector<int64_t> v(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b)
    v[static_cast<size_t>(b)] = core::uniform_int(seed, static_cast<uint64_t>(b), 0, max_len);
  return v;
}

inline Context with_impl(const char* id, std::string* used = nullptr) {
  Context c;
  c.impl = id;
  c.impl_used = used;
  return c;
}

}  // namespace recops::testing
