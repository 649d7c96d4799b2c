// jagged/segment_sum_csr/cuda/kernel.cuh: the device code (reads only the params).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/jagged/segment_sum_csr/params.h"

namespace recops::ops::segment_sum_csr_ns {

// Acc: fp64 for double, uint64 (sums modulo 2^64) for the integers, fp32 otherwise.
template <class T>
using DevAcc =
    std::conditional_t<std::is_same_v<T, double>, double,
                       std::conditional_t<std::is_integral_v<T>, unsigned long long, float>>;

template <class T>
__device__ __forceinline__ DevAcc<T> dev_load(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<unsigned long long>(static_cast<long long>(v));
  else if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return core::cuda::to_float(v);
}

template <class T>
__device__ __forceinline__ T dev_store(DevAcc<T> a) {
  if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>)
    return static_cast<T>(a);  // integers: two's complement wrap to T's width
  else
    return core::cuda::from_float<T>(a);
}

// csr_seg[i] clamped into [0, N / batch_size] (invalid offsets with validation off stay in bounds).
__device__ __forceinline__ int64_t csr_clamped(const Params& p, int64_t i) {
  const int64_t k = i * p.csr_stride;
  const int64_t v = p.csr_int64 ? static_cast<const int64_t*>(p.csr_seg)[k]
                                : static_cast<const int32_t*>(p.csr_seg)[k];
  const int64_t hi = p.N / p.batch_size;
  return v < 0 ? 0 : (v > hi ? hi : v);
}

// One warp per segment, warps grid-stride over segments. Lane l sums elements begin + l,
// begin + l + 32, ...; the lanes combine by a fixed shuffle tree (deterministic, no atomics).
template <class T>
__global__ void segment_sum_kernel(Params p) {
  using Acc = DevAcc<T>;
  const T* v = static_cast<const T*>(p.values);
  T* out = static_cast<T*>(p.out);
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
       i < p.S; i += warps) {
    const int64_t begin = csr_clamped(p, i) * p.batch_size;
    const int64_t end = csr_clamped(p, i + 1) * p.batch_size;  // < begin: an empty segment
    Acc acc = 0;
    for (int64_t j = begin + lane; j < end; j += 32) acc += dev_load(v[j]);
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
    if (lane == 0) out[i] = dev_store<T>(acc);
  }
}

}  // namespace recops::ops::segment_sum_csr_ns
