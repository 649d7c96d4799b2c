// training/common/cuda/gdn_chunk.cuh: device helpers the GDN sub-ops' CUDA paths share
// (chunk_bwd_dqkwg, prepare_wy_repr_bwd): elements read and written through a runtime dtype switch
// (uniform over the grid, so one instance per arithmetic type serves every input dtype), the
// gate's exp / exp2, a deterministic block sum, and the chunk of a chunk slot (training_ops.md
// §4.2: fla's chunk numbering, sync-free for varlen).
//
// Chunk slots: without seq_offsets slot i is chunk i % per_batch of batch i / per_batch
// (per_batch = ceil(T / BT)). With seq_offsets sequence n owns the slots [S(n), S(n+1)),
// S(n) = floor(off[n] / BT) + n: at least its ceil(len_n / BT) chunks (a slot past them is empty),
// floor(T / BT) + N slots in all. A block finds n by binary search (S is increasing for valid
// offsets) and the chunk's running number, Σ_{m<n} ceil(len_m / BT) + c, by a block sum over the
// earlier sequences. Offsets are clamped to [0, T], so unvalidated offsets never index outside.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "recops/dtype.h"
#include "recops/status.h"

namespace recops::ops::training::gdn_cuda {

// Element i of a floating tensor of dtype t, as S (exact: every dtype widens exactly).
template <class S>
__device__ __forceinline__ S load(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<S>(static_cast<const double*>(base)[i]);
    case DType::fp32: return static_cast<S>(static_cast<const float*>(base)[i]);
    case DType::fp16: return static_cast<S>(__half2float(static_cast<const __half*>(base)[i]));
    default: return static_cast<S>(__bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]));
  }
}

// x rounded once to dtype t at element i. From double to 16 bits: to float by round-to-odd, then
// to nearest even (float's extra bits make that the correctly rounded result, as the CPU's
// from_double).
__device__ __forceinline__ void store(void* base, DType t, int64_t i, double x) {
  switch (t) {
    case DType::fp64: static_cast<double*>(base)[i] = x; return;
    case DType::fp32: static_cast<float*>(base)[i] = __double2float_rn(x); return;
    default: {
      float f = __double2float_rz(x);
      if (static_cast<double>(f) != x) f = __int_as_float(__float_as_int(f) | 1);  // NaN stays NaN
      if (t == DType::fp16)
        static_cast<__half*>(base)[i] = __float2half_rn(f);
      else
        static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(f);
      return;
    }
  }
}

// x rounded once to dtype t at element i (to nearest even).
__device__ __forceinline__ void store(void* base, DType t, int64_t i, float x) {
  switch (t) {
    case DType::fp64: static_cast<double*>(base)[i] = static_cast<double>(x); return;
    case DType::fp32: static_cast<float*>(base)[i] = x; return;
    case DType::fp16: static_cast<__half*>(base)[i] = __float2half_rn(x); return;
    default: static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(x); return;
  }
}

// exp or exp2 of x in S, as the CPU paths' std::exp / std::exp2.
template <class S>
__device__ __forceinline__ S gate_exp(S x, bool log2) {
  if constexpr (std::is_same_v<S, double>)
    return log2 ? exp2(x) : exp(x);
  else
    return log2 ? exp2f(x) : expf(x);
}

// The sum of x over the block, the same value in every thread (warp butterflies, then the warp
// totals in warp order). Every thread of the block calls it; blockDim.x a multiple of 32, at
// most 32 · warps; scratch: `warps` elements.
template <class A>
__device__ __forceinline__ A block_sum(A x, A* scratch, int warps) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  __syncthreads();  // the previous call's readers are done with scratch
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = x;
  __syncthreads();
  A s = 0;
  const int used =
      static_cast<int>(blockDim.x >> 5) < warps ? static_cast<int>(blockDim.x >> 5) : warps;
  for (int w = 0; w < used; ++w) s += scratch[w];
  return s;
}

// Offset n, clamped to [0, T].
__device__ __forceinline__ int64_t offset_at(const void* off, DType t, int64_t n, int64_t T) {
  const int64_t v =
      t == DType::int32 ? static_cast<const int32_t*>(off)[n] : static_cast<const int64_t*>(off)[n];
  return v < 0 ? 0 : (v > T ? T : v);
}

struct SlotChunk {
  int64_t row0;   // first row of the flattened [B·T] time axis
  int64_t rows;   // <= 0: an empty slot
  int64_t index;  // running chunk number: b·ceil(T / BT) + c, or over the packed sequences
};

// The number of chunk slots (>= the chunks).
inline int64_t slot_count(int64_t B, int64_t T, int64_t bt, int64_t N, bool packed) {
  return packed ? T / bt + N : B * ((T + bt - 1) / bt);
}

// The grid of a kernel over (chunk slot, key head) items, K walked in tiles of `tile` columns
// (at least one tile, also for K = 0); blocks clamped to max_blocks (grid-stride beyond).
struct ChunkGrid {
  int64_t items = 0, blocks = 0, k_tiles = 1;
};
inline ChunkGrid chunk_grid(int64_t B, int64_t T, int64_t bt, int64_t N, bool packed, int64_t H,
                            int64_t K, int64_t tile, int64_t max_blocks) {
  ChunkGrid g;
  g.items = slot_count(B, T, bt, N, packed) * H;
  g.blocks = g.items < max_blocks ? g.items : max_blocks;
  g.k_tiles = K > tile ? (K + tile - 1) / tile : 1;
  return g;
}

// The host side of a GDN sub-op's run_cuda before its launch: Ok with *empty set when there is
// nothing to write (B, T or H = 0), an error for a chunk size above max_bt or for offsets without
// a sequence while T > 0; else *empty = false and the device is made current by `device`.
inline Status chunk_preamble(const char* op, int64_t B, int64_t T, int64_t H, int64_t bt,
                             int64_t max_bt, bool packed, int64_t N, bool* empty) {
  *empty = B == 0 || T == 0 || H == 0;
  if (*empty) return Status::Ok();
  if (bt < 1 || bt > max_bt)
    return Status(
        StatusCode::internal,
        std::string(op) + ": cuda_sm80 reached with a chunk size above " + std::to_string(max_bt));
  if (packed && N < 1)
    return Status(StatusCode::invalid_argument,
                  std::string(op) + ": seq_offsets has no sequence but T > 0");
  return Status::Ok();
}

// Slot `slot`'s chunk, the same in every thread; every thread of the block calls it (a block sum
// with offsets; scratch: `warps` elements). off: nullptr, or N + 1 offsets (N >= 1) of dtype t.
__device__ __forceinline__ SlotChunk slot_chunk(int64_t slot, int64_t T, int64_t bt,
                                                const void* off, DType t, int64_t N,
                                                long long* scratch, int warps) {
  SlotChunk s;
  if (!off) {
    const int64_t per_batch = (T + bt - 1) / bt;
    const int64_t b = slot / per_batch, c = slot % per_batch;
    s.row0 = b * T + c * bt;
    s.rows = T - c * bt < bt ? T - c * bt : bt;
    s.index = b * per_batch + c;
    return s;
  }
  int64_t lo = 0, hi = N - 1;  // the largest n in [0, N) with S(n) <= slot (0 if none)
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (offset_at(off, t, mid, T) / bt + mid <= slot)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t a = offset_at(off, t, lo, T), e = offset_at(off, t, lo + 1, T);
  const int64_t c = slot - (a / bt + lo);  // >= 0 for valid offsets
  s.row0 = a + c * bt;
  const int64_t left = e - s.row0;
  s.rows = (c < 0 || left <= 0) ? 0 : (left < bt ? left : bt);
  long long before = 0;  // the chunks of the sequences before lo
  for (int64_t m = threadIdx.x; m < lo; m += blockDim.x) {
    const int64_t len = offset_at(off, t, m + 1, T) - offset_at(off, t, m, T);
    before += len > 0 ? (len + bt - 1) / bt : 0;
  }
  s.index = static_cast<int64_t>(block_sum(before, scratch, warps)) + c;
  return s;
}

}  // namespace recops::ops::training::gdn_cuda
