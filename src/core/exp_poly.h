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
inline float exp_poly_f32(float x) {
  const float lo = -87.33f, hi = 88.37f;
  const float c = x < lo ? lo : (x > hi ? hi : x);  // NaN stays NaN, and reaches r
  const float ck = c == c ? c : 0.0f;               // the exponent's int conversion: finite
  const float k = std::floor(ck * 1.44269504088896341f + 0.5f);
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
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  const float v = e * scale;
  return x < lo ? 0.0f : v;
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::core
