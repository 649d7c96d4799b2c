// ops/jagged/common/cpu_half.h: fp16 conversions for the jagged CPU implementations, through the
// compiler's _Float16 where it has one (exact widening, one round-to-nearest-even narrowing from
// float or double: the same bits as recops/dtype.h's to_float and half_from_double). Measured about
// 2x faster than the library's portable to_float(Half) / half_from_float in a convert-scale-convert
// loop (g++ -O3, x86-64), so the CPU loops keep it.
#pragma once

#include <cstring>

#include "recops/dtype.h"
#include "recops/isa_ns.h"

namespace recops::ops {
// The ISA-named inline namespace (recops/isa_ns.h): *_avx2.cpp files include this header too.
inline namespace RECOPS_ISA_NS {

#if defined(__FLT16_MAX__)
inline float cpu_half_to_float(Half v) {
  _Float16 h;
  std::memcpy(&h, &v.bits, sizeof h);
  return static_cast<float>(h);
}
// V: float or double; one rounding.
template <class V>
Half cpu_half_from(V v) {
  const _Float16 h = static_cast<_Float16>(v);
  Half r;
  std::memcpy(&r.bits, &h, sizeof h);
  return r;
}
#else
inline float cpu_half_to_float(Half v) {
  return to_float(v);
}
template <class V>
Half cpu_half_from(V v) {
  return half_from_double(static_cast<double>(v));
}
#endif

}  // namespace RECOPS_ISA_NS
}  // namespace recops::ops
