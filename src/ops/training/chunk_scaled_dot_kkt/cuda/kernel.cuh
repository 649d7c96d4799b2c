// training/chunk_scaled_dot_kkt/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, key head h); a block takes items grid-stride, every loop bounded by the
// chunk's actual rows R (a tail chunk has R < BT) and by K. Per item:
//   1. the strictly lower triangle of the chunk's Gram matrix k_t·k_j (j < t < R) is built in a
//      BT x BT shared tile of the arithmetic type S (fp32; fp64 for fp64 k): k's rows are staged
//      KT columns at a time (coalesced along K, widened once), and each thread owns fixed (t, j)
//      pairs across the steps, so it adds its pairs' products serially (FMA) with no atomics;
//   2. for each value head hv of h's group (GVA: hv / (HV / H) = h) the chunk's beta and G are
//      staged (as S, like the CPU's load_as) and every element of the chunk's rows of A is written
//      (coalesced along j): beta_t · gram · exp(G_t − G_j) (exp2 with gate_log2, no factor without
//      g) for j < t, else an exact 0; rounded once to fp32.
// Only exponentials of non-positive differences are formed (training_ops.md §4.2 Numerics), as on
// the CPU. Arithmetic as the CPU path: S products, S exponential, one rounding to fp32 at the end;
// the dot is one serial FMA chain (the CPU uses 8 partial sums; both are fp32 dots).
//
// Chunk slots: training/common/cuda/gdn_chunks.cuh (sync-free varlen numbering, §4.2's
// NT bound; a slot past its sequence's chunks is empty and skipped by the whole block).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/training/common/cuda/gdn_chunks.cuh"
#include "ops/training/chunk_scaled_dot_kkt/cuda/tiles.h"
#include "ops/training/chunk_scaled_dot_kkt/params.h"

namespace recops::ops::chunk_scaled_dot_kkt_ns {

// k's element as S (exact for every dtype into fp32, except fp64, which only meets S = double).
template <class S, class TK>
__device__ __forceinline__ S widen_k(TK v) {
  if constexpr (std::is_same_v<TK, double>)
    return static_cast<S>(v);
  else
    return static_cast<S>(core::cuda::to_float(v));
}

// Element i of beta or G (dtype t) as S; the switch is uniform across the block.
template <class S>
__device__ __forceinline__ S load_as(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<S>(static_cast<const double*>(base)[i]);
    case DType::fp32: return static_cast<S>(static_cast<const float*>(base)[i]);
    case DType::fp16: return static_cast<S>(__half2float(static_cast<const __half*>(base)[i]));
    default: return static_cast<S>(__bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]));
  }
}

// Γ for a difference d = G_t − G_j <= 0: exp(d), or exp2(d) with gate_log2 (full precision).
__device__ __forceinline__ float decay(float d, bool log2) {
  return log2 ? exp2f(d) : expf(d);
}
__device__ __forceinline__ double decay(double d, bool log2) {
  return log2 ? exp2(d) : exp(d);
}

// items = slots · H; blockDim.x = kThreads.
template <class TK>
__global__ void __launch_bounds__(kThreads)
    chunk_scaled_dot_kkt_kernel(const Params p, int64_t items) {
  using S = std::conditional_t<std::is_same_v<TK, double>, double, float>;
  constexpr int KT = kKTile<S>;
  __shared__ S kt[kMaxBT][KT + 1];  // the chunk's k rows, KT columns of them (padded: no conflicts)
  __shared__ S gram[kMaxBT][kMaxBT];    // k_t·k_j for j < t < R
  __shared__ S sb[kMaxBT], sg[kMaxBT];  // beta and G of one value head
  const TK* k = static_cast<const TK*>(p.k);
  const int64_t H = p.H, HV = p.HV, K = p.K, group = HV / H;
  const int bt = static_cast<int>(p.BT);
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t slot = item / H, h = item % H;
    const training_dev::GdnChunk ch =
        training_dev::gdn_slot_chunk(p.seq_offsets, p.off_dtype, p.N, p.T, p.BT, slot);
    const int64_t row0 = ch.row0, rows = ch.len;
    if (rows <= 0) continue;  // uniform: the whole block skips the slot
    const int R = static_cast<int>(rows);
    // Each thread's pairs: e = tid, tid + nt, ... of the BT x BT square (the same every step).
    for (int e = tid; e < bt * bt; e += nt) gram[e / bt][e % bt] = S(0);
    for (int64_t c0 = 0; c0 < K; c0 += KT) {
      const int kw = static_cast<int>(K - c0 < KT ? K - c0 : KT);
      __syncthreads();  // the previous step's readers are done with kt
      for (int e = tid; e < R * KT; e += nt) {
        const int t = e / KT, c = e % KT;
        kt[t][c] = c < kw ? widen_k<S>(k[((row0 + t) * H + h) * K + c0 + c]) : S(0);
      }
      __syncthreads();
      for (int e = tid; e < bt * bt; e += nt) {
        const int t = e / bt, j = e % bt;
        if (j < t && t < R) {
          S acc = gram[t][j];
          for (int c = 0; c < kw; ++c) acc += kt[t][c] * kt[j][c];
          gram[t][j] = acc;
        }
      }
    }
    __syncthreads();  // the Gram tile is complete
    for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
      for (int t = tid; t < R; t += nt) {
        const int64_t i = (row0 + t) * HV + hv;
        sb[t] = load_as<S>(p.beta, p.beta_dtype, i);
        sg[t] = p.g ? load_as<S>(p.g, p.g_dtype, i) : S(0);
      }
      __syncthreads();
      for (int e = tid; e < R * bt; e += nt) {
        const int t = e / bt, j = e % bt;
        S v = S(0);
        if (j < t) {
          v = sb[t] * gram[t][j];
          if (p.g) v *= decay(sg[t] - sg[j], p.gate_log2);
        }
        p.A[((row0 + t) * HV + hv) * p.BT + j] = static_cast<float>(v);
      }
      __syncthreads();  // sb, sg (and, after the last head, gram) free for reuse
    }
  }
}

}  // namespace recops::ops::chunk_scaled_dot_kkt_ns
