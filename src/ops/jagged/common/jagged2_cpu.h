// ops/jagged/common/jagged2_cpu.h: what the jagged2_* CPU paths share: the arithmetic type of a
// load (fp64 stays fp64; fp32, fp16 and bf16 widen exactly to fp32) and one rounding back.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/jagged/common/cpu_half.h"
#include "recops/dtype.h"

namespace recops::ops {

template <class T>
inline auto jagged2_widen(T v) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return to_float(v);
  } else if constexpr (std::is_same_v<T, Half>) {
    return cpu_half_to_float(v);
  } else {
    return v;  // float or double
  }
}

// A: float (any T) or double (T = double); one round-to-nearest-even.
template <class T, class A>
inline T jagged2_narrow(A v) {
  if constexpr (std::is_same_v<T, BFloat16> && std::is_same_v<A, double>) {
    return bf16_from_double(v);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return cpu_bf16_from_float(v);
  } else if constexpr (std::is_same_v<T, Half>) {
    return cpu_half_from(v);
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace recops::ops
