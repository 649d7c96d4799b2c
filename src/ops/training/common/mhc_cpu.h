// training/common/mhc_cpu.h: what the mHC ops' CPU paths (mhc_pre_bmm, mhc_post) share: fp64
// arithmetic for every dtype (their sums of signed streams cancel; see their READMEs), the
// conversions to and from it, and a dot product in a fixed order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "recops/isa_ns.h"
#include "recops/dtype.h"

namespace recops::ops::training::mhc_cpu {
// Inside the ISA-named namespace: cpu_generic and cpu_avx2 (mhc_post/cpu/kernel.h) both build
// these, with different instructions.
inline namespace RECOPS_ISA_NS {

template <class V>
constexpr bool kNative = std::is_same_v<V, double> || std::is_same_v<V, float>;

// 16-bit values widen through fp32 (exact, and much cheaper than to_double's generic decode) and
// narrow through fp32 (a 2^-24 rounding before the 16-bit one: at worst one 16-bit ulp from the
// single rounding, in rare ties; within the single standard).
template <class V>
double widen(V v) {
  if constexpr (kNative<V>)
    return static_cast<double>(v);
  else
    return static_cast<double>(to_float(v));
}
template <class V>
V narrow(double v) {
  if constexpr (kNative<V>)
    return static_cast<V>(v);
  else
    return from_float<V>(static_cast<float>(v));
}

// <a, b> over m values: four partial sums, combined in a fixed order (deterministic, and the loop
// vectorises without reassociation flags).
inline double dot(const double* a, const double* b, int64_t m) {
  double s[4] = {0, 0, 0, 0};
  int64_t c = 0;
  for (; c + 4 <= m; c += 4)
    for (int k = 0; k < 4; ++k) s[k] += a[c + k] * b[c + k];
  for (; c < m; ++c) s[0] += a[c] * b[c];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::ops::training::mhc_cpu
