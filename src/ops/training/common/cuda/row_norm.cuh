// training/common/cuda/row_norm.cuh: the device half of the row-reduction kit the row-norm ops
// share (training_ops.md §1: fp32 statistics, deterministic reductions, no float atomics).
//
// A row is owned by a row group of `width` threads: one warp (width 32) for short rows, the whole
// CTA (width = blockDim.x, a multiple of 32) above. The row is cut into vectors of kN elements
// (kN = 16 / sizeof(T) when every row start is 16-byte aligned, else 1); thread `lane` takes
// vectors s = lane, lane + width, ... The first kSlots of them stay in registers between the
// passes over the row (RowCache); later ones, if any, are read again from global memory (L2).
// Group sums: a warp butterfly (every lane gets the same bits), then for CTA groups the warps'
// sums added in warp order through shared memory.
//
// Owners: the rows are split into O contiguous ranges (training::partial_begin), one per row
// group of the grid; with a weight gradient, O = training::norm_partials(rows, D) and owner o
// writes its column sums to row o of a [O, D] fp32 workspace, which column_sum_kernel then adds
// in a fixed order (set by O alone). Nothing depends on timing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/launch.h"
#include "core/cuda/numeric.cuh"
#include "ops/training/common/row_norm.h"

namespace recops::ops::training_dev {

using core::cuda::from_float;
using core::cuda::to_float;

// The kN elements of T in the 16 bytes u as floats.
template <class T, int kN>
__device__ __forceinline__ void unpack_vec(const uint4& u, float (&out)[kN]) {
  static_assert(kN * sizeof(T) == 16, "row_norm: a vector is 16 bytes");
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<T, float>) {
      out[i] = __uint_as_float(w[i]);
    } else if constexpr (std::is_same_v<T, __half>) {
      out[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu)));
      out[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
    } else {
      out[2 * i] = __uint_as_float(w[i] << 16);  // bf16 is the high half of a float
      out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
}

// kN elements of T at p (aligned to kN * sizeof(T) bytes when kN > 1) as floats.
template <class T, int kN>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[kN]) {
  if constexpr (kN == 1)
    out[0] = to_float(*p);
  else
    unpack_vec<T, kN>(*reinterpret_cast<const uint4*>(p), out);
}

// The bits of a 16-bit float.
__device__ __forceinline__ uint16_t bits16(__half v) {
  return __half_as_ushort(v);
}
__device__ __forceinline__ uint16_t bits16(__nv_bfloat16 v) {
  return __bfloat16_as_ushort(v);
}

// Rounds kN floats once to T and stores them at p (aligned as for load_vec).
template <class T, int kN>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[kN]) {
  if constexpr (kN == 1) {
    *p = from_float<T>(in[0]);
  } else {
    // The 16 bytes built as four 32-bit words, so that the store is one 128-bit instruction
    // (through a union of T[kN] nvcc emitted four 32-bit stores for 16-bit T).
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (std::is_same_v<T, float>) {
        w[i] = __float_as_uint(in[i]);
      } else {
        const T lo = from_float<T>(in[2 * i]), hi = from_float<T>(in[2 * i + 1]);
        w[i] = static_cast<uint32_t>(bits16(lo)) | static_cast<uint32_t>(bits16(hi)) << 16;
      }
    }
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// The row group of this thread: `width` threads from `first` (warp-aligned).
struct RowGroup {
  int lane;       // 0 .. width-1
  int width;      // 32, or blockDim.x
  int index;      // the group's index in the grid
  int count;      // groups in the grid
  int per_block;  // groups per CTA
};

__device__ __forceinline__ RowGroup row_group(int width) {
  RowGroup g;
  g.width = width;
  g.per_block = static_cast<int>(blockDim.x) / width;
  g.lane = static_cast<int>(threadIdx.x) % width;
  g.index = static_cast<int>(blockIdx.x) * g.per_block + static_cast<int>(threadIdx.x) / width;
  g.count = static_cast<int>(gridDim.x) * g.per_block;
  return g;
}

// The sum of v (float or double) over the row group, the same bits in every thread of it.
// smem: blockDim.x / 32 values (used only by CTA-wide groups, which call this uniformly across
// the CTA).
template <class V>
__device__ __forceinline__ V group_sum(V v, const RowGroup& g, V* smem) {
#pragma unroll
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  if (g.width == 32) return v;
  const int warp = static_cast<int>(threadIdx.x) / 32, warps = g.width / 32;
  __syncthreads();  // the previous sum's readers are done with smem
  if (threadIdx.x % 32 == 0) smem[warp] = v;
  __syncthreads();
  V s = 0;
  for (int w = 0; w < warps; ++w) s += smem[w];
  return s;
}

// group_sum for row groups of any width: 1, 2, 4, .., 32 lanes of a warp (row_launch_packed), or
// the CTA. A group narrower than a warp sums over its own lanes only (the warp's other groups may
// be elsewhere in their row loops), the same bits in each of them.
template <class V>
__device__ __forceinline__ V packed_group_sum(V v, const RowGroup& g, V* smem) {
  if (g.width >= 32) return group_sum(v, g, smem);
  const int first = static_cast<int>(threadIdx.x) % 32 / g.width * g.width;
  const unsigned lanes = ((1u << g.width) - 1u) << first;
  for (int m = g.width / 2; m > 0; m /= 2) v += __shfl_xor_sync(lanes, v, m);
  return v;
}

// Calls f(k, s) for this thread's vectors s of a row of `nvec` vectors, k the slot: k < kSlots
// for the register-cached ones (unrolled, so k is a constant after inlining), kSlots for the rest.
template <int kSlots, class F>
__device__ __forceinline__ void for_slots(int64_t nvec, const RowGroup& g, F&& f) {
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    const int64_t s = g.lane + static_cast<int64_t>(k) * g.width;
    if (s < nvec) f(k, s);
  }
  for (int64_t s = g.lane + static_cast<int64_t>(kSlots) * g.width; s < nvec; s += g.width)
    f(kSlots, s);
}

// Calls f(o, r0, r1) for each owner o of this row group (owners o = index, index + count, ...),
// [r0, r1) its contiguous range of the rows (training::partial_begin).
template <class F>
__device__ __forceinline__ void for_owners(int64_t rows, int64_t owners, const RowGroup& g, F&& f) {
  for (int64_t o = g.index; o < owners; o += g.count)
    f(o, training::partial_begin(rows, owners, o), training::partial_begin(rows, owners, o + 1));
}

// Calls f(row) for each row of this row group's owners, in order (for_owners).
template <class F>
__device__ __forceinline__ void for_owned_rows(int64_t rows, int64_t owners, const RowGroup& g,
                                               F&& f) {
  for_owners(rows, owners, g, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) f(row);
  });
}

// kSlots vectors of one row held in registers.
template <int kN, int kSlots>
struct RowCache {
  // 16-byte vectors stay as loaded (4 registers, not kN floats: 8 for 16-bit T) and are
  // converted again on each get; single elements as floats.
  using Slot = std::conditional_t<kN == 1, float, uint4>;
  Slot v[kSlots > 0 ? kSlots : 1];

  // Vector s of `row` into out; cached in slot k when k < kSlots.
  template <class T>
  __device__ __forceinline__ void load(int k, int64_t s, const T* row, float (&out)[kN]) {
    if constexpr (kN == 1) {
      load_vec<T, kN>(row + s, out);
      if (k < kSlots) v[k] = out[0];
    } else {
      const uint4 u = *reinterpret_cast<const uint4*>(row + s * kN);
      unpack_vec<T, kN>(u, out);
      if (k < kSlots) v[k] = u;
    }
  }
  // Vector s again: from the cache when k < kSlots, else from memory.
  template <class T>
  __device__ __forceinline__ void get(int k, int64_t s, const T* row, float (&out)[kN]) const {
    if (k < kSlots) {
      if constexpr (kN == 1)
        out[0] = v[k];
      else
        unpack_vec<T, kN>(v[k], out);
    } else {
      load_vec<T, kN>(row + s * kN, out);
    }
  }
  // Loads this thread's vectors of `row` (caching the first kSlots) and returns the sum of their
  // squares in V (this thread's part only; group_sum adds the parts).
  template <class V, class T>
  __device__ __forceinline__ V load_sum_sq(const T* row, int64_t nvec, const RowGroup& g) {
    V ss = 0;
    for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
      float v[kN];
      load(k, s, row, v);
#pragma unroll
      for (int j = 0; j < kN; ++j) ss += static_cast<V>(v[j]) * v[j];
    });
    return ss;
  }
};

// A float pair hi + lo that carries a sum to about twice float's precision without fp64 math
// (fp64 conversions run at a fraction of the fp32 rate): the backward statistics whose rounding
// dx = r·(g − r²c·x) would amplify where the two terms cancel.
struct FloatPair {
  float hi = 0.f, lo = 0.f;

  // += a·b: the product split error-free with an fma, the sum with TwoSum (no ordering needed);
  // both rounding errors go to lo. The _rn intrinsics keep nvcc from contracting p into the sum.
  __device__ __forceinline__ void add_prod(float a, float b) {
    const float p = __fmul_rn(a, b), pe = fmaf(a, b, -p);
    const float s = __fadd_rn(hi, p), bp = __fsub_rn(s, hi);
    const float se = __fadd_rn(__fsub_rn(hi, __fsub_rn(s, bp)), __fsub_rn(p, bp));
    hi = s;
    lo += se + pe;
  }
  // += a·b·c with a·b rounded to float: the error of a·b (an fma) is added times c to lo.
  __device__ __forceinline__ void add_prod3(float a, float b, float c) {
    const float q = __fmul_rn(a, b), qe = fmaf(a, b, -q);
    add_prod(q, c);
    lo = fmaf(qe, c, lo);
  }
  // A non-finite hi (an inf or NaN term) is the sum: the error terms of an inf are inf − inf = NaN
  // and must not turn +inf into NaN (the reference's plain sum stays inf).
  __device__ __forceinline__ double value() const {
    return isfinite(hi) ? static_cast<double>(hi) + static_cast<double>(lo)
                        : static_cast<double>(hi);
  }
};

// The split of a double into floats hi + lo (hi = v rounded, lo = the rest rounded).
__device__ __forceinline__ void split_double(double v, float& hi, float& lo) {
  hi = static_cast<float>(v);
  lo = isfinite(hi) ? static_cast<float>(v - static_cast<double>(hi)) : 0.f;  // inf: no rest
}

// a·b − (kh + kl)·x with kh + kl a double split in two floats (split_double): kh·x = q + qe
// exactly, a·b − q is one fma, so where the terms cancel the result keeps its relative accuracy
// (a few roundings of the result, not of the terms).
__device__ __forceinline__ float sub_split_prod(float a, float b, float kh, float kl, float x) {
  const float q = __fmul_rn(kh, x);
  if (!isfinite(q)) return fmaf(a, b, -q);  // its error inf − inf would be NaN: a·b − q as is
  const float qe = fmaf(kh, x, -q);
  return fmaf(-kl, x, fmaf(a, b, -q) - qe);
}

// One rounding of a double to W.
template <class W>
__device__ __forceinline__ W from_double(double v) {
  if constexpr (std::is_same_v<W, __half>)
    return __double2half(v);
  else if constexpr (std::is_same_v<W, __nv_bfloat16>)
    return __double2bfloat16(v);
  else
    return static_cast<W>(v);
}

// Column sums of a [P, D] partials array in A (float, or double for ops with fp64 partials):
// out[d] = Σ_i part[i * D + d], rounded once to W (P = 0: zeros). A CTA of kColSumSlices x 32
// threads takes 32 columns; slice y adds the rows i ≡ y (mod kColSumSlices) in increasing i
// through kColSumAcc interleaved accumulators, then slice 0 adds the slices in order of y. The
// order depends on P only, so every run gives the same bits. (A single thread a column walked
// all P rows: with P = 2048 and D = 128 that was one CTA doing 2048 dependent round trips.)
inline constexpr int kColSumSlices = 32;
inline constexpr int kColSumAcc = 4;

template <class W, class A = float>
__global__ void __launch_bounds__(32 * kColSumSlices)
    column_sum_kernel(const A* part, int64_t P, int64_t D, W* out) {
  __shared__ A sums[kColSumSlices][33];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t d = static_cast<int64_t>(blockIdx.x) * 32 + tx;
  A acc[kColSumAcc];
#pragma unroll
  for (int a = 0; a < kColSumAcc; ++a) acc[a] = 0;
  if (d < D) {
    constexpr int64_t kStep = int64_t{kColSumSlices} * kColSumAcc;
    for (int64_t i = ty; i < P; i += kStep)
#pragma unroll
      for (int a = 0; a < kColSumAcc; ++a)
        if (i + a * kColSumSlices < P) acc[a] += part[(i + a * kColSumSlices) * D + d];
  }
  A s = 0;
#pragma unroll
  for (int a = 0; a < kColSumAcc; ++a) s += acc[a];
  sums[ty][tx] = s;
  __syncthreads();
  if (ty != 0 || d >= D) return;
  A t = 0;
  for (int y = 0; y < kColSumSlices; ++y) t += sums[y][tx];
  if constexpr (std::is_same_v<A, double>)
    out[d] = from_double<W>(t);
  else
    out[d] = from_float<W>(t);
}

// Launches column_sum_kernel for D columns (nothing for D = 0).
template <class W, class A>
Status launch_column_sum(const char* op, const A* part, int64_t P, int64_t D, W* out,
                         void* stream) {
  if (D <= 0) return Status::Ok();
  return RECOPS_LAUNCH_KERNEL(op, (column_sum_kernel<W, A>),
                              dim3(static_cast<unsigned>((D + 31) / 32)), dim3(32, kColSumSlices),
                              0, stream, part, P, D, out);
}

}  // namespace recops::ops::training_dev
