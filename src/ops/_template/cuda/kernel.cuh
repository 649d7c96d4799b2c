// __family__/__op__/cuda/kernel.cuh: the device code (reads only the params).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/cuda/numeric.cuh"
#include "ops/__family__/__op__/params.h"

namespace recops::ops::__op___ns {

// out[i] = factor * x[i]: a grid-stride loop, fp32 arithmetic.
template <class T>
__global__ void scale_kernel(Params p) {
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  const float f = static_cast<float>(p.factor);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.N;
       i += stride)
    out[i] = core::cuda::from_float<T>(f * core::cuda::to_float(x[i]));
}

}  // namespace recops::ops::__op___ns
