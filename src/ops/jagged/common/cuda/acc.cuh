// ops/jagged/common/cuda/acc.cuh: the arithmetic type of the jagged kernels' loads (fp64 stays
// fp64; fp32, fp16 and bf16 widen exactly to fp32 through core/cuda/numeric.cuh) and one rounding
// back from it.
#pragma once

#include <type_traits>

#include "core/cuda/numeric.cuh"

namespace recops::ops::jagged_dev {

__device__ __forceinline__ double to_acc(double v) {
  return v;
}
template <class T>
__device__ __forceinline__ float to_acc(T v) {
  return core::cuda::to_float(v);
}
// A: float (any T) or double (T = double).
template <class T, class A>
__device__ __forceinline__ T from_acc(A v) {
  if constexpr (std::is_same_v<A, double>)
    return static_cast<T>(v);
  else
    return core::cuda::from_float<T>(v);
}

}  // namespace recops::ops::jagged_dev
