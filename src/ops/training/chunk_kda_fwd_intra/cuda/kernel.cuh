// training/chunk_kda_fwd_intra/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, value head hv), the slots being training/common/cuda/gdn_chunks.cuh's
// sync-free chunk grid (an empty slot's block goes on to its next item). One block per item, in
// three phases, S = fp32 (fp64 when k is fp64) as the CPU path:
// 1. Scores, over key tiles of KT columns (staged in shared memory as S: q, k at key head
//    hv / (HV / H), G, each row loaded along K). Thread t owns the entries (i, j) = (16b + e / 64,
//    e % 64), e = t + 256 s, of every 16-row sub-block b, and accumulates them in registers across
//    the tiles in the order d = 0, 1, ... of the CPU path's dots: inside the diagonal sub-block
//    with the per-pair factor exp(G_i − G_j)·k_j; for an earlier column j < r = 16b with the
//    factorisation (q_i·exp(G_i − G_r))·(k_j·exp(G_r − G_j)) (row factors once per tile, column
//    factors once per tile and sub-block; both exponents ≤ 0 for decays G ≤ 0). Then
//    Aqk = scale·sum is written (0 above the diagonal and past the chunk) and M = β_i·sum goes to
//    shared memory.
// 2. Akk = (I + M)^-1 in place, row by row: thread c forms X_i[c] = −Σ_{c ≤ j < i} M_ij X_j[c]
//    (j ascending, as the CPU path), then the row is written back; Akk is stored as fp32.
// 3. Products over column tiles of DT: x_j = β_j·k_j·exp(G_j) (and qg = q·exp(G), kg =
//    k·exp(G_last − G) on the way) for w, x_j = β_j·v_j for u; thread (ty, tx) forms rows
//    ty, ty + RG, ... of column tx as Σ_{j ≤ t} Akk[t, j]·x_j with FMAs in j order.
// Every output element comes from one thread (no atomics, deterministic) and is rounded once to
// its dtype.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "ops/training/chunk_kda_fwd_intra/cuda/tiles.h"
#include "ops/training/chunk_kda_fwd_intra/params.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_kda_fwd_intra_ns {

namespace dev = training_dev;

// x rounded once into element i of a floating tensor of runtime dtype t.
template <class S>
__device__ __forceinline__ void kda_store(void* base, DType t, int64_t i, S x) {
  switch (t) {
    case DType::fp64: static_cast<double*>(base)[i] = static_cast<double>(x); break;
    case DType::fp32: static_cast<float*>(base)[i] = static_cast<float>(x); break;
    case DType::fp16:
      if constexpr (std::is_same_v<S, double>)
        static_cast<__half*>(base)[i] = __double2half(x);
      else
        static_cast<__half*>(base)[i] = dev::gdn_narrow<S, __half>(x);
      break;
    default:
      if constexpr (std::is_same_v<S, double>)
        static_cast<__nv_bfloat16*>(base)[i] = __double2bfloat16(x);
      else
        static_cast<__nv_bfloat16*>(base)[i] = dev::gdn_narrow<S, __nv_bfloat16>(x);
  }
}

template <class S>
__global__ void __launch_bounds__(kThreads)
    chunk_kda_fwd_intra_kernel(const Params p, int64_t items) {
  constexpr int KT = kKT<S>, KP = KT + 1, DT = kDT<S>;
  constexpr int kTile = kMaxBT * KP;
  constexpr int kArea = 6 * kTile > kMaxBT * DT ? 6 * kTile : kMaxBT * DT;
  constexpr int RG = kThreads / DT;              // row groups of the product phase
  constexpr int RPT = kMaxBT / RG;               // rows a thread at most
  constexpr int EPT = kSub * kMaxBT / kThreads;  // score entries a thread per sub-block
  __shared__ S area[kArea];                      // score tiles, then the product tile
  __shared__ S a_s[kMaxBT * kMaxBT];             // M, then Akk (row stride 64)
  __shared__ S beta_s[kMaxBT];
  S* q_s = area;
  S* k_s = area + kTile;
  S* g_s = area + 2 * kTile;
  S* xq_s = area + 3 * kTile;
  S* xk_s = area + 4 * kTile;
  S* cf_s = area + 5 * kTile;
  S* x_s = area;
  const int64_t HV = p.HV, H = p.H, K = p.K, V = p.V, BT = p.BT, group = HV / p.H;
  const bool log2 = p.gate_log2;
  const S scale = static_cast<S>(p.scale);
  const int tid = static_cast<int>(threadIdx.x);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const dev::GdnItem it = dev::gdn_item(p.seq_offsets, p.off_dtype, p.N, p.T, BT, HV, 1, item);
    const dev::GdnChunk& ch = it.ch;
    if (ch.len <= 0) continue;  // the same for the whole block
    const int R = static_cast<int>(ch.len);
    const int nb = (R + kSub - 1) / kSub;
    const int64_t hv = it.hv, h = hv / group, row0 = ch.row0;
    if (tid < R) beta_s[tid] = dev::gdn_load<S>(p.beta, p.beta_dtype, (row0 + tid) * HV + hv);
    __syncthreads();  // beta_s is read below even when K = 0
    // Phase 1: the scores.
    S accq[kSubs][EPT], accm[kSubs][EPT];
#pragma unroll
    for (int b = 0; b < kSubs; ++b)
#pragma unroll
      for (int s = 0; s < EPT; ++s) accq[b][s] = accm[b][s] = S(0);
    for (int64_t k0 = 0; k0 < K; k0 += KT) {
      for (int e = tid; e < R * KT; e += kThreads) {
        const int i = e / KT, d = e % KT;
        const int64_t col = k0 + d;
        S qv = S(0), kv = S(0), gv = S(0);  // zero past K: contributes nothing
        if (col < K) {
          const int64_t at = ((row0 + i) * H + h) * K + col;
          qv = dev::gdn_load<S>(p.q, p.q_dtype, at);
          kv = dev::gdn_load<S>(p.k, p.k_dtype, at);
          gv = dev::gdn_load<S>(p.g, p.g_dtype, ((row0 + i) * HV + hv) * K + col);
        }
        q_s[i * KP + d] = qv;
        k_s[i * KP + d] = kv;
        g_s[i * KP + d] = gv;
      }
      __syncthreads();
      // Row factors exp(G_i − G_r), r the first row of i's sub-block (rows of sub-block 0 unused).
      for (int e = tid; e < R * KT; e += kThreads) {
        const int i = e / KT, d = e % KT, r = (i / kSub) * kSub;
        const S f = dev::gdn_exp<S>(g_s[i * KP + d] - g_s[r * KP + d], log2);
        xq_s[i * KP + d] = q_s[i * KP + d] * f;
        xk_s[i * KP + d] = k_s[i * KP + d] * f;
      }
      // The diagonal sub-blocks, per pair (reads only the staged tiles).
#pragma unroll
      for (int b = 0; b < kSubs; ++b) {
        if (b >= nb) break;
#pragma unroll
        for (int s = 0; s < EPT; ++s) {
          const int e = tid + kThreads * s;
          const int i = b * kSub + e / kMaxBT, j = e % kMaxBT;
          if (i < R && j <= i && j >= b * kSub) {
            S sq = accq[b][s], sk = accm[b][s];
            for (int d = 0; d < KT; ++d) {
              const S f =
                  dev::gdn_exp<S>(g_s[i * KP + d] - g_s[j * KP + d], log2) * k_s[j * KP + d];
              sq = dev::gdn_fma(q_s[i * KP + d], f, sq);
              sk = dev::gdn_fma(k_s[i * KP + d], f, sk);
            }
            accq[b][s] = sq;
            accm[b][s] = sk;
          }
        }
      }
      // Earlier columns j < r = 16b of sub-block b: column factors k_j·exp(G_r − G_j).
#pragma unroll
      for (int b = 1; b < kSubs; ++b) {
        if (b >= nb) break;  // uniform across the block
        const int r = b * kSub;
        __syncthreads();  // xq/xk written; cf_s free
        for (int e = tid; e < r * KT; e += kThreads) {
          const int j = e / KT, d = e % KT;
          cf_s[j * KP + d] =
              k_s[j * KP + d] * dev::gdn_exp<S>(g_s[r * KP + d] - g_s[j * KP + d], log2);
        }
        __syncthreads();
#pragma unroll
        for (int s = 0; s < EPT; ++s) {
          const int e = tid + kThreads * s;
          const int i = r + e / kMaxBT, j = e % kMaxBT;
          if (i < R && j < r) {
            S sq = accq[b][s], sk = accm[b][s];
            for (int d = 0; d < KT; ++d) {
              const S c = cf_s[j * KP + d];
              sq = dev::gdn_fma(xq_s[i * KP + d], c, sq);
              sk = dev::gdn_fma(xk_s[i * KP + d], c, sk);
            }
            accq[b][s] = sq;
            accm[b][s] = sk;
          }
        }
      }
      __syncthreads();  // the next tile overwrites the staged tiles
    }
    // Aqk to global (k's dtype), M (diagonal 1, the X_i[i] of phase 2) to shared memory.
#pragma unroll
    for (int b = 0; b < kSubs; ++b) {
#pragma unroll
      for (int s = 0; s < EPT; ++s) {
        const int e = tid + kThreads * s;
        const int i = b * kSub + e / kMaxBT, j = e % kMaxBT;
        if (i < R && j < BT) {
          S aq = S(0), m = S(0);
          if (j <= i) aq = scale * accq[b][s];
          if (j < i) m = beta_s[i] * accm[b][s];
          if (j == i) m = S(1);
          kda_store<S>(p.Aqk, p.k_dtype, ((row0 + i) * HV + hv) * BT + j, aq);
          a_s[i * kMaxBT + j] = m;
        }
      }
    }
    __syncthreads();
    // Phase 2: Akk = (I + M)^-1 in place; rows j < i of a_s already hold X_j.
    for (int i = 1; i < R; ++i) {
      S x = S(0);
      if (tid < i)
        for (int j = tid; j < i; ++j)
          x = dev::gdn_fma(-a_s[i * kMaxBT + j], a_s[j * kMaxBT + tid], x);
      __syncthreads();
      if (tid < i) a_s[i * kMaxBT + tid] = x;
      __syncthreads();
    }
    for (int e = tid; e < R * BT; e += kThreads) {
      const int i = static_cast<int>(e / BT), j = static_cast<int>(e % BT);
      static_cast<float*>(p.Akk)[((row0 + i) * HV + hv) * BT + j] =
          static_cast<float>(a_s[i * kMaxBT + j]);
    }
    // Phase 3: w (with qg, kg) over K, then u over V.
    const int tx = tid % DT, ty = tid / DT;
    for (int pass = 0; pass < 2; ++pass) {
      const bool with_k = pass == 0;
      const int64_t D = with_k ? K : V;
      for (int64_t c0 = 0; c0 < D; c0 += DT) {
        for (int e = tid; e < R * DT; e += kThreads) {
          const int j = e / DT, d = e % DT;
          const int64_t col = c0 + d;
          S x = S(0);
          if (col < D) {
            if (with_k) {
              const int64_t at = ((row0 + j) * H + h) * K + col;
              const int64_t ag = ((row0 + j) * HV + hv) * K + col;
              const S kv = dev::gdn_load<S>(p.k, p.k_dtype, at);
              const S gd = dev::gdn_load<S>(p.g, p.g_dtype, ag);
              const S gl = dev::gdn_load<S>(p.g, p.g_dtype, ((row0 + R - 1) * HV + hv) * K + col);
              const S eg = dev::gdn_exp<S>(gd, log2);
              x = beta_s[j] * kv * eg;
              kda_store<S>(p.qg, p.q_dtype, ag, dev::gdn_load<S>(p.q, p.q_dtype, at) * eg);
              kda_store<S>(p.kg, p.k_dtype, ag, kv * dev::gdn_exp<S>(gl - gd, log2));
            } else {
              x = beta_s[j] * dev::gdn_load<S>(p.v, p.v_dtype, ((row0 + j) * HV + hv) * V + col);
            }
          }
          x_s[j * DT + d] = x;
        }
        __syncthreads();
        S acc[RPT];
#pragma unroll
        for (int r = 0; r < RPT; ++r) acc[r] = S(0);
        for (int j = 0; j < R; ++j) {
          const S xv = x_s[j * DT + tx];
#pragma unroll
          for (int r = 0; r < RPT; ++r) {
            const int t = ty + RG * r;
            if (t < R && j <= t) acc[r] = dev::gdn_fma(a_s[t * kMaxBT + j], xv, acc[r]);
          }
        }
        const int64_t col = c0 + tx;
        if (col < D) {
#pragma unroll
          for (int r = 0; r < RPT; ++r) {
            const int t = ty + RG * r;
            if (t < R)
              kda_store<S>(with_k ? p.w : p.u, with_k ? p.k_dtype : p.v_dtype,
                           ((row0 + t) * HV + hv) * D + col, acc[r]);
          }
        }
        __syncthreads();  // the next tile overwrites x_s
      }
    }
    __syncthreads();  // the next item overwrites beta_s and a_s
  }
}

}  // namespace recops::ops::chunk_kda_fwd_intra_ns
