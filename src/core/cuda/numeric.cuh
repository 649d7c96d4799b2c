// core/cuda/numeric.cuh: device code templated over the floating dtypes (double, float, __half,
// __nv_bfloat16): widening to float (fp64 rounds) and single rounding back, so that op kernels
// need not repeat these.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace recops::core::cuda {

__device__ __forceinline__ float to_float(float v) {
  return v;
}
__device__ __forceinline__ float to_float(double v) {
  return static_cast<float>(v);
}
__device__ __forceinline__ float to_float(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return static_cast<T>(v);
}

// Exact widening to double (float, half and bf16 all embed in it).
template <class T>
__device__ __forceinline__ double to_double(T v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return static_cast<double>(to_float(v));
}

// x rounded once to U (the host's from_double). 16-bit U: x rounded to float by round-to-odd
// (towards zero, last bit set when inexact), then float -> U to nearest even: float's extra bits
// make that the correctly rounded result.
template <class U>
__device__ __forceinline__ U from_double(double x) {
  if constexpr (std::is_same_v<U, double>) {
    return x;
  } else if constexpr (std::is_same_v<U, float>) {
    return __double2float_rn(x);
  } else {
    float f = __double2float_rz(x);
    if (static_cast<double>(f) != x) f = __int_as_float(__float_as_int(f) | 1);  // NaN stays NaN
    return from_float<U>(f);
  }
}

}  // namespace recops::core::cuda
