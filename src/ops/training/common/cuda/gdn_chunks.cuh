// training/common/cuda/gdn_chunks.cuh: the sync-free chunk grid of the GDN sub-ops' CUDA kernels
// (training_ops.md §4.2 "Chunk grid"; chunk_scaled_dot_kkt, solve_tril, recompute_w_u_fwd,
// chunk_fwd_o) and their scalar helpers (runtime-dtype loads, exp/exp2, FMA, the single rounding to
// the output dtype). Device code reading only sizes and the offsets in device memory, so a launch
// needs no host copy of seq_offsets.
//
// Chunk slots: without offsets slot i is chunk i % ceil(T/BT) of batch row i / ceil(T/BT). With
// offsets (B = 1) sequence n owns the slots [S(n), S(n+1)), S(n) = floor(off[n]/BT) + n: at least
// ceil(len_n / BT) of them (floor(e/BT) − floor(a/BT) + 1 ≥ ceil((e − a)/BT)); S(N) = floor(T/BT)
// + N slots in all (the bound NT ≤ ceil(T/BT) + N), and a slot past its sequence's chunks is
// empty (its block exits early). S is non-decreasing for valid offsets, so a block finds its
// sequence by binary search. Offsets are clamped to [0, T] before use: even offsets that were not
// validated never index outside the tensors.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "recops/dtype.h"

namespace recops::ops::training_dev {

// Host: the number of chunk slots (see above); n_seq >= 1 with offsets.
inline int64_t gdn_chunk_slots(bool packed, int64_t B, int64_t T, int64_t bt, int64_t n_seq) {
  return packed ? T / bt + n_seq : B * (T / bt + (T % bt != 0));
}

// Element i of a floating tensor of runtime dtype t (fp64, fp32, fp16, bf16) as S (float: fp64
// rounds once; 16-bit widen exactly). The branch is uniform across a block.
template <class S>
__device__ __forceinline__ S gdn_load(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<S>(static_cast<const double*>(base)[i]);
    case DType::fp32: return static_cast<S>(static_cast<const float*>(base)[i]);
    case DType::fp16: return static_cast<S>(__half2float(static_cast<const __half*>(base)[i]));
    default: return static_cast<S>(__bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]));
  }
}

// exp(x), or exp2(x) with log2 (gate_log2), at S's precision (expf / exp2f for float, not the
// fast intrinsics).
template <class S>
__device__ __forceinline__ S gdn_exp(S x, bool log2) {
  if constexpr (std::is_same_v<S, double>)
    return log2 ? exp2(x) : exp(x);
  else
    return log2 ? exp2f(x) : expf(x);
}

template <class S>
__device__ __forceinline__ S gdn_fma(S a, S b, S c) {
  if constexpr (std::is_same_v<S, double>)
    return __fma_rn(a, b, c);
  else
    return __fmaf_rn(a, b, c);
}

// An S result rounded once to the output type TO (S = float for 16-bit TO).
template <class S, class TO>
__device__ __forceinline__ TO gdn_narrow(S x) {
  if constexpr (std::is_same_v<TO, double> || std::is_same_v<TO, float>)
    return static_cast<TO>(x);
  else
    return core::cuda::from_float<TO>(x);
}

// Offset n of an int32/int64 offsets array, clamped to [0, T].
__device__ __forceinline__ int64_t gdn_offset(const void* off, DType t, int64_t n, int64_t T) {
  const int64_t v =
      t == DType::int32 ? static_cast<const int32_t*>(off)[n] : static_cast<const int64_t*>(off)[n];
  return v < 0 ? 0 : (v > T ? T : v);
}

// One slot's chunk: its first row of the flattened [B·T] time axis, its length (<= 0: empty
// slot), its sequence and its number within that sequence.
struct GdnChunk {
  int64_t row0 = 0;
  int64_t len = 0;
  int64_t seq = 0;
  int64_t c = 0;
};

__device__ __forceinline__ GdnChunk gdn_slot_chunk(const void* off, DType off_dtype, int64_t n_seq,
                                                   int64_t T, int64_t bt, int64_t slot) {
  GdnChunk ch;
  if (!off) {
    const int64_t per_row = T / bt + (T % bt != 0);
    ch.seq = slot / per_row;
    ch.c = slot % per_row;
    ch.row0 = ch.seq * T + ch.c * bt;
    const int64_t left = T - ch.c * bt;
    ch.len = left < bt ? left : bt;
    return ch;
  }
  int64_t lo = 0, hi = n_seq - 1;  // the largest n with S(n) <= slot (0 if none)
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (gdn_offset(off, off_dtype, mid, T) / bt + mid <= slot)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t a = gdn_offset(off, off_dtype, lo, T), e = gdn_offset(off, off_dtype, lo + 1, T);
  ch.seq = lo;
  ch.c = slot - (a / bt + lo);
  ch.row0 = a + ch.c * bt;
  const int64_t left = e - ch.row0;
  ch.len = (ch.c < 0 || left <= 0) ? 0 : (left < bt ? left : bt);
  return ch;
}

// Work item `item` of a launch over (chunk slot, value head, column tile), tiles fastest: its
// chunk, value head hv and tile.
struct GdnItem {
  GdnChunk ch;
  int64_t hv = 0;
  int64_t tile = 0;
};

__device__ __forceinline__ GdnItem gdn_item(const void* off, DType off_dtype, int64_t n_seq,
                                            int64_t T, int64_t bt, int64_t HV, int64_t tiles,
                                            int64_t item) {
  GdnItem it;
  const int64_t rest = item % (HV * tiles);
  it.hv = rest / tiles;
  it.tile = rest % tiles;
  it.ch = gdn_slot_chunk(off, off_dtype, n_seq, T, bt, item / (HV * tiles));
  return it;
}

// The running number of chunk `ch` among all chunks in fla's order (prepare_chunk_indices): with
// offsets Σ_{m < seq} ceil(len_m / BT) + c, summed by the whole block (every thread must call it;
// `scratch` holds blockDim.x / 32 values); without offsets seq · ceil(T/BT) + c.
__device__ __forceinline__ int64_t gdn_chunk_index(const void* off, DType off_dtype, int64_t T,
                                                   int64_t bt, const GdnChunk& ch,
                                                   int64_t* scratch) {
  if (!off) return ch.seq * (T / bt + (T % bt != 0)) + ch.c;
  int64_t part = 0;
  for (int64_t m = threadIdx.x; m < ch.seq; m += blockDim.x) {
    const int64_t len = gdn_offset(off, off_dtype, m + 1, T) - gdn_offset(off, off_dtype, m, T);
    if (len > 0) part += len / bt + (len % bt != 0);
  }
  for (int d = 16; d > 0; d >>= 1) part += __shfl_down_sync(0xffffffffu, part, d);
  const int warps = static_cast<int>(blockDim.x >> 5);
  __syncthreads();  // scratch may still be read from an earlier call
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = part;
  __syncthreads();
  int64_t total = 0;
  for (int w = 0; w < warps; ++w) total += scratch[w];
  return total + ch.c;
}

}  // namespace recops::ops::training_dev
