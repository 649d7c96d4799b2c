// core/tolerance.h: the accuracy standard's per-dtype thresholds (accuracy.md), shared by the CLI
// and the tests. One place; any loosening needs a comment and review.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>

#include "recops/dtype.h"

namespace recops::core {

// T: the dtype's threshold, about its unit roundoff times a few accumulation steps.
inline double threshold(DType t) {
  switch (t) {
    case DType::fp64: return 0x1p-40;     // not in accuracy.md: fp64 ops against an fp64 golden
    case DType::fp32: return 0x1p-13;     // 2^-13: fp32 accumulation over long sums
    case DType::fp16: return 0x1p-10;     // 2^-10: one fp16 ulp at 1
    case DType::bf16: return 0x1p-7;      // 2^-7: one bf16 ulp at 1
    case DType::fp8_e4m3: return 0x1p-3;  // 2^-3: one e4m3 ulp at 1
    default: return 0.0;                  // integer and bool outputs compare exactly
  }
}
// tf32 (matmuls with allow_tf32) uses 2^-10.
inline constexpr double kTf32Threshold = 0x1p-10;

// The smallest normal of each floating dtype: `small` in accuracy.md, before scaling by the
// output's typical magnitude.
inline double smallest_normal(DType t) {
  switch (t) {
    case DType::fp64: return 2.2250738585072014e-308;
    case DType::fp32: return 1.1754943508222875e-38;
    case DType::fp16: return 6.103515625e-05;
    case DType::bf16: return 1.1754943508222875e-38;
    case DType::fp8_e4m3: return 0.015625;
    default: return 0.0;
  }
}

// The spacing of the dtype's values at |x| (one ulp: the step from |x| to the next larger
// value; subnormals included). The CLI's golden is the fp64 result rounded once to the output
// dtype, so an output one correct rounding away from a value within fp32 noise of the exact one
// can sit one ulp from it (the exact value lay near a midpoint); the double standard's max-abs
// term allows that one ulp (tools/recops/judge.h). 0 for integer dtypes.
inline double output_ulp(DType t, double x) {
  int mant = 0, emin = 0;
  switch (t) {
    case DType::fp64: mant = 52, emin = -1022; break;
    case DType::fp32: mant = 23, emin = -126; break;
    case DType::fp16: mant = 10, emin = -14; break;
    case DType::bf16: mant = 7, emin = -126; break;
    case DType::fp8_e4m3: mant = 3, emin = -6; break;
    default: return 0.0;
  }
  if (!std::isfinite(x)) return 0.0;
  int e = emin;
  if (x != 0) {
    std::frexp(x, &e);  // |x| = m 2^e, m in [0.5, 1): the binade's exponent is e - 1
    e = std::max(e - 1, emin);
  }
  return std::ldexp(1.0, e - mant);
}

enum class Standard { exact, single, dbl };
inline std::string_view standard_name(Standard s) {
  return s == Standard::exact ? "exact" : s == Standard::single ? "single" : "double";
}

// What a floating output must do where the golden is non-finite, or becomes so (accuracy.md;
// cases.yaml's `nonfinite:`, judged on every run; `recops check --nonfinite` makes inputs
// non-finite):
//   exact   : the same elements non-finite, each the same value (NaN, +inf or -inf);
//   pattern : the same elements non-finite; NaN and ±inf interchangeable (a non-finite input
//             meets inf - inf or 0 * inf in another order than the reference's);
//   covers  : every element the golden has non-finite is non-finite (never a silent finite
//             value); the op may make more elements non-finite, those its README names (a blocked
//             or chunked algorithm spreads a non-finite input over its tile or chunk).
enum class NonfiniteRule { exact, pattern, covers };
inline std::string_view nonfinite_rule_name(NonfiniteRule r) {
  return r == NonfiniteRule::exact ? "exact" : r == NonfiniteRule::pattern ? "pattern" : "covers";
}

}  // namespace recops::core
