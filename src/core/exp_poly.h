// core/exp_poly.h: exp for fp32 that compilers vectorise (no call, no branch), for the CPU loops
// built with AVX2 + FMA (*_avx2.cpp, *_avx512.cpp), where std::exp is one scalar libm call per
// element: fused_cross_entropy's and chunk_loss's row statistics (training/common/ce_row_cpu.h,
// PolyExp) and jagged_softmax's column loops (jagged/jagged_softmax/cpu/kernel.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "recops/isa_ns.h"

namespace recops::core {
// The ISA-named inline namespace (recops/isa_ns.h): each ISA's objects get their own copy.
inline namespace RECOPS_ISA_NS {

// x = k·ln2 + r with k = round(x·log2e) and r from a two-part ln2 (Cody-Waite), exp(r) by Cephes'
// degree-6 polynomial on |r| <= ln2/2 (about 1 ulp there), 2^k put into the exponent bits. x below
// -87.33 (where 2^k would leave the normal range) gives 0, as does -inf; NaN gives NaN (it reaches
// the polynomial); values above 88.37 are clamped (no inf). The callers' arguments are at most 0
// (a logit minus its row's max or lse, a value minus its column's max).
// k is rounded by adding 1.5·2^23 (the sum's low mantissa bits are then k + 2^22, read as an
// integer), not by floor and a float-to-int conversion: on a Zen 1 core (256-bit operations split
// in two) that took the loop of jagged_softmax's exponentials from 2.0 to 1.4 ns per element.
inline float exp_poly_f32(float x) {
  const float lo = -87.33f, hi = 88.37f;
  const float c = x < lo ? lo : (x > hi ? hi : x);  // NaN stays NaN, and reaches r
  constexpr float kRound = 12582912.0f;             // 1.5 * 2^23
  const float kr = c * 1.44269504088896341f + kRound;
  const float k = kr - kRound;  // round(c·log2e), |k| <= 128 (NaN for NaN: r and e are NaN)
  float r = std::fma(k, -0.693359375f, c);
  r = std::fma(k, 2.12194440e-4f, r);
  const float r2 = r * r;
  float q = 1.9875691500e-4f;
  q = std::fma(q, r, 1.3981999507e-3f);
  q = std::fma(q, r, 8.3334519073e-3f);
  q = std::fma(q, r, 4.1665795894e-2f);
  q = std::fma(q, r, 1.6666665459e-1f);
  q = std::fma(q, r, 5.0000001201e-1f);
  const float e = std::fma(q, r2, r) + 1.0f;
  int32_t kbits;
  std::memcpy(&kbits, &kr, sizeof kbits);
  const int32_t bits = (kbits - 0x4B400000 + 127) << 23;  // 0x4B400000: kRound's bits
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  const float v = e * scale;
  return x < lo ? 0.0f : v;
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::core
