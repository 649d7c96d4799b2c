// training/common/counter_rng.h: the counter-based dropout RNG of the training ops (host and
// device, so that CPU and CUDA draw the same mask). Not torch's generator: masks are not
// bit-equal to torch.nn.functional.dropout.
//
// Definition (an op's README repeats it; its golden implements it again from this text):
//   e = offset + row * W + col       (W: the output row's width; all arithmetic mod 2^64)
//   z = seed + (e + 1) * 0x9E3779B97F4A7C15
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//   z = z ^ (z >> 31)                 (splitmix64's finaliser)
//   v = (z >> 40) * 2^-24             (a uniform in [0, 1) on a 2^-24 grid)
//   kept iff v >= p (dropout ratio p); a kept value is scaled by 1 / (1 - p).
#pragma once

#include <cstdint>

#include "ops/training/common/row_norm.h"  // RECOPS_TRAINING_HD

namespace recops::ops::training {

// The uniform v in [0, 1) of element e (= offset + row * W + col) under seed.
RECOPS_TRAINING_HD inline float counter_uniform(uint64_t seed, uint64_t e) {
  uint64_t z = seed + (e + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// Whether element e is kept by dropout with ratio p.
RECOPS_TRAINING_HD inline bool dropout_keep(uint64_t seed, uint64_t e, float p) {
  return counter_uniform(seed, e) >= p;
}

}  // namespace recops::ops::training
