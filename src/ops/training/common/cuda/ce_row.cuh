// training/common/cuda/ce_row.cuh: the device pieces of the cross-entropy row kernels that
// fused_cross_entropy and chunk_loss share: the online (max, sum of exp) pair and its CTA
// combination, the soft cap, and the CTA's fixed-order fp64 sums. Deterministic: butterflies in
// which each lane pair combines the same two values, then the warps in warp order.
#pragma once

#include <cstdint>

namespace recops::ops::training_dev {

// Row i's label of a params struct P with labels (int64 when labels_int64, else int32),
// ignore_index and V; counted: not ignored and in [0, V) (a bad label counts as ignored, so no
// access leaves the row when value validation is off).
template <class P>
__device__ __forceinline__ int64_t ce_label_at(const P& p, int64_t i) {
  return p.labels_int64 ? static_cast<const int64_t*>(p.labels)[i]
                        : static_cast<int64_t>(static_cast<const int32_t*>(p.labels)[i]);
}
template <class P>
__device__ __forceinline__ bool ce_counted(const P& p, int64_t y) {
  return y != p.ignore_index && y >= 0 && y < p.V;
}

// The running (max, sum of exp(z - max)) of a set of logits.
struct MaxSum {
  float m, s;
};
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// The CTA's combination of every thread's (ms, sz), the same bits in every thread. smem: 32
// entries of each. Each lane pair combines the same two values (commutative), then the warps'
// results are combined in warp order.
__device__ __forceinline__ void cta_combine(MaxSum& ms, float& sz, MaxSum* sm_ms, float* sm_z) {
#pragma unroll
  for (int k = 16; k > 0; k /= 2) {
    const MaxSum o{__shfl_xor_sync(0xffffffffu, ms.m, k), __shfl_xor_sync(0xffffffffu, ms.s, k)};
    ms = combine(ms, o);
    sz += __shfl_xor_sync(0xffffffffu, sz, k);
  }
  const int warp = static_cast<int>(threadIdx.x) / 32, warps = static_cast<int>(blockDim.x) / 32;
  __syncthreads();  // the previous row's readers are done with smem
  if (threadIdx.x % 32 == 0) sm_ms[warp] = ms, sm_z[warp] = sz;
  __syncthreads();
  ms = sm_ms[0];
  sz = sm_z[0];
  for (int w = 1; w < warps; ++w) ms = combine(ms, sm_ms[w]), sz += sm_z[w];
}

__device__ __forceinline__ float capped(float v, float cap) {
  return cap > 0.f ? cap * tanhf(v / cap) : v;
}

// The CTA's fp64 sums of v (the same bits in every thread): lane butterfly, then warps in order.
template <int kK>
__device__ __forceinline__ void cta_sum(double (&v)[kK], double (*sm)[32]) {
#pragma unroll
  for (int k = 16; k > 0; k /= 2)
#pragma unroll
    for (int j = 0; j < kK; ++j) v[j] += __shfl_xor_sync(0xffffffffu, v[j], k);
  const int warp = static_cast<int>(threadIdx.x) / 32, warps = static_cast<int>(blockDim.x) / 32;
  if (threadIdx.x % 32 == 0)
    for (int j = 0; j < kK; ++j) sm[j][warp] = v[j];
  __syncthreads();
  for (int j = 0; j < kK; ++j) {
    v[j] = 0;
    for (int w = 0; w < warps; ++w) v[j] += sm[j][w];
  }
}

}  // namespace recops::ops::training_dev
