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

}  // namespace recops::core::cuda
