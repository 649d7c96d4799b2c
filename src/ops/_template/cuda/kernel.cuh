// __family__/__op__/cuda/kernel.cuh: the device code (reads only the params).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/__family__/__op__/params.h"

namespace recops::ops::__op___ns {

__device__ inline float to_f(float v) {
  return v;
}
__device__ inline float to_f(__half v) {
  return __half2float(v);
}
__device__ inline float to_f(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T>
__device__ inline T from_f(float v) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return v;
}

// out[i] = factor * x[i]: a grid-stride loop, fp32 arithmetic.
template <class T>
__global__ void scale_kernel(Params p) {
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  const float f = static_cast<float>(p.factor);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.N;
       i += stride)
    out[i] = from_f<T>(f * to_f(x[i]));
}

}  // namespace recops::ops::__op___ns
