// training/chunk_fwd_o/cuda/kernel_gk.cuh: the device code with gk (KDA's per-channel gate cumsum G
// [B, T, HV, K], training_ops.md §4.5); reads only the params. kernel.cuh serves the scalar g.
//
// Work items as kernel.cuh's: (chunk slot, value head hv, V tile of 64 columns) over
// training/common/cuda/gdn_chunks.cuh's sync-free chunk grid. With gk the scores depend on the
// value head:
//   A[t, j] = scale·Σ_d q_td·k_jd·exp(G_td − G_jd)   (j ≤ t)
//   o[t, v] = scale·Σ_d q_td·exp(G_td)·h_c[d, v] + Σ_{j ≤ t} A[t, j]·v_new[j, v]
// and the exponentials follow the CPU path's 16-row sub-block split (cpu/chunk_fwd_o_cpu.cpp,
// fwd_o_gk), so that only non-positive exponents are formed: for t in the sub-block starting at
// row r and j < r, exp(G_td − G_jd) = exp(G_td − G_rd)·exp(G_rd − G_jd), q_t scaled by the first
// factor (qx) and k_j by the second (kx, one copy per later sub-block); inside the diagonal
// sub-block exp(G_td − G_jd) is formed per pair (j ≤ t). q_td·exp(G_td) (qg) multiplies h_c.
//
// Thread (ty, tx) of 4 × 64 owns rows t = ty + 4i (i < 16, t < R), so row t's sub-block is i / 4
// (a constant after unrolling), the score column j = tx and the output column tx. Phase 1 walks K
// in slices of KT (16 for fp32, 8 for fp64): the chunk's q and k rows at key head hv / (HV/H) and
// G rows at hv are staged as S (fp32; fp64 for fp64 q), then qg, qx and kx are formed from them,
// then each thread accumulates its scores and (qg_t·h_c)[tx] with FMAs in K order. Phase 2 (the
// same shared memory) stages A and the v_new rows and forms o as the CPU path does (q·h times
// scale, then the A·v terms in j order), rounded once to o's dtype (q's). One output per thread,
// no atomics: deterministic. A chunk numbered past h's NT (device offsets, validation off) gets
// NaN rows, as in kernel.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ops/training/chunk_fwd_o/cuda/tiles.h"
#include "ops/training/chunk_fwd_o/params.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_fwd_o_ns {

inline constexpr int kGkSub = 16;                          // sub-block rows (the CPU path's kSub)
inline constexpr int kGkSubs = kMaxBT / kGkSub;            // sub-blocks of a 64-row chunk
inline constexpr int kGkRowsPerSub = kGkSub / kRowGroups;  // a thread's rows in one sub-block
static_assert(kGkRowsPerSub * kRowGroups == kGkSub, "row t = ty + 4i lies in sub-block i / 4");
// The K slice of the gk kernel (q, k, G, qg, qx and 3 kx copies, [64][KT + 1] each, and h
// [KT][VT]).
template <class S>
inline constexpr int kGkKT = sizeof(S) == 8 ? 8 : 16;
template <class S>
inline constexpr size_t kGkPhase1Elems =
    static_cast<size_t>(5 + kGkSubs - 1) * kMaxBT*(kGkKT<S> + 1) + kGkKT<S>* kVT;
// Phase 2: the scores A [64][64] and the v_new rows [64][VT].
inline constexpr size_t kGkPhase2Elems = static_cast<size_t>(kMaxBT) * kMaxBT + kMaxBT * kVT;
// Dynamic shared memory, in S elements: fp32 38.9 KB; fp64 64 KB (the launch raises the kernel's
// limit past the 48 KB default).
template <class S>
inline constexpr size_t kGkSmemElems =
    kGkPhase1Elems<S> > kGkPhase2Elems ? kGkPhase1Elems<S> : kGkPhase2Elems;

// x rounded once to o's dtype t (fp64 when S is double: o has q's dtype).
template <class S>
__device__ __forceinline__ void gk_store_o(void* o, DType t, int64_t i, S x) {
  if constexpr (std::is_same_v<S, double>) {
    static_cast<double*>(o)[i] = x;
  } else {
    switch (t) {
      case DType::fp32: static_cast<float*>(o)[i] = x; break;
      case DType::fp16:
        static_cast<__half*>(o)[i] = training_dev::gdn_narrow<float, __half>(x);
        break;
      default:
        static_cast<__nv_bfloat16*>(o)[i] = training_dev::gdn_narrow<float, __nv_bfloat16>(x);
        break;
    }
  }
}

// S: fp32, or fp64 for fp64 q (and o). items = slots * HV * vtiles; dynamic shared memory:
// kGkSmemElems<S> elements of S; blockDim.x = kThreads.
template <class S>
__global__ void __launch_bounds__(kThreads)
    chunk_fwd_o_gk_kernel(const Params p, int64_t vtiles, int64_t items) {
  constexpr int KT = kGkKT<S>, KP = KT + 1, RPT = kRowsPerThread, RG = kRowGroups;
  constexpr int TILE = kMaxBT * KP;
  extern __shared__ __align__(16) unsigned char fo_gk_smem[];
  __shared__ int64_t scratch[kThreads / 32];
  S* const sm = reinterpret_cast<S*>(fo_gk_smem);
  S* const q_s = sm;              // phase 1: q rows [64][KP]
  S* const k_s = sm + TILE;       //          k rows
  S* const g_s = sm + 2 * TILE;   //          G rows (gk at hv)
  S* const qg_s = sm + 3 * TILE;  //          q ⊙ exp(G)
  S* const qx_s = sm + 4 * TILE;  //          q_t ⊙ exp(G_t − G_r), rows t >= 16 (r: t's block)
  S* const kx_s = sm + 5 * TILE;  //          [3][64][KP]: k_j ⊙ exp(G_r − G_j), r = 16b > j
  S* const h_s = sm + (5 + kGkSubs - 1) * TILE;  // [KT][VT]
  S* const w_s = sm;                             // phase 2: A [64][64]
  S* const v_s = sm + kMaxBT * kMaxBT;           //          v_new rows [64][VT]
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT, group = HV / H;
  const S scale = static_cast<S>(p.scale);
  const bool log2 = p.gate_log2;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % kVT, ty = tid / kVT;
  const int sj = tx / kGkSub;  // the sub-block of score column j = tx
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const training_dev::GdnItem it =
        training_dev::gdn_item(p.seq_offsets, p.off_dtype, p.N, p.T, BT, HV, vtiles, item);
    const training_dev::GdnChunk& ch = it.ch;
    const int64_t hv = it.hv, vt = it.tile;
    if (ch.len <= 0) continue;  // the same for the whole block
    const int64_t idx =
        training_dev::gdn_chunk_index(p.seq_offsets, p.off_dtype, p.T, BT, ch, scratch);
    const int R = static_cast<int>(ch.len);
    const int64_t col = vt * kVT + tx, hk = hv / group;
    const bool col_ok = col < V;
    if (p.seq_offsets && idx >= p.NT) {  // h too small for the offsets: visible NaN, never read
      for (int i = 0; i < RPT; ++i) {
        const int t = ty + RG * i;
        if (t < R && col_ok)
          gk_store_o<S>(p.o, p.o_dtype, ((ch.row0 + t) * HV + hv) * V + col,
                        S(__int_as_float(0x7fc00000)));
      }
      continue;
    }
    S sc[RPT], qh[RPT];
#pragma unroll
    for (int i = 0; i < RPT; ++i) sc[i] = qh[i] = S(0);
    const int64_t hbase = (idx * HV + hv) * K * V;
    for (int64_t k0 = 0; k0 < K; k0 += KT) {
      const int kw = static_cast<int>(K - k0 < KT ? K - k0 : KT);
      // The raw rows t < R (columns past kw zero) and qg; the slice's rows of h_c.
      for (int e = tid; e < R * KT; e += kThreads) {
        const int t = e / KT, c = e % KT;
        S qv = S(0), kv = S(0), gv = S(0);
        if (c < kw) {
          const int64_t at = ((ch.row0 + t) * H + hk) * K + k0 + c;
          qv = training_dev::gdn_load<S>(p.q, p.q_dtype, at);
          kv = training_dev::gdn_load<S>(p.k, p.k_dtype, at);
          gv = training_dev::gdn_load<S>(p.gk, p.gk_dtype, ((ch.row0 + t) * HV + hv) * K + k0 + c);
        }
        q_s[t * KP + c] = qv;
        k_s[t * KP + c] = kv;
        g_s[t * KP + c] = gv;
        qg_s[t * KP + c] = qv * training_dev::gdn_exp(gv, log2);
      }
      for (int e = tid; e < KT * kVT; e += kThreads) {
        const int c = e / kVT, vv = e % kVT;
        const int64_t hc = vt * kVT + vv;
        h_s[c * kVT + vv] =
            c < kw && hc < V ? training_dev::gdn_load<S>(p.h, p.h_dtype, hbase + (k0 + c) * V + hc)
                             : S(0);
      }
      __syncthreads();  // the raw rows for the factors below
      // qx for the rows of sub-blocks 1.. (block start r = t rounded down to 16).
      for (int e = kGkSub * KT + tid; e < R * KT; e += kThreads) {
        const int t = e / KT, c = e % KT;
        const int r = t / kGkSub * kGkSub;
        qx_s[t * KP + c] =
            q_s[t * KP + c] * training_dev::gdn_exp(g_s[t * KP + c] - g_s[r * KP + c], log2);
      }
      // kx copy b - 1 for the sub-block starting at r = 16b (r < R): rows j < r.
      for (int e = tid; e < (kGkSubs - 1) * kMaxBT * KT; e += kThreads) {
        const int b = e / (kMaxBT * KT) + 1, rest = e % (kMaxBT * KT);
        const int j = rest / KT, c = rest % KT, r = b * kGkSub;
        if (r < R && j < r)
          kx_s[((b - 1) * kMaxBT + j) * KP + c] =
              k_s[j * KP + c] * training_dev::gdn_exp(g_s[r * KP + c] - g_s[j * KP + c], log2);
      }
      __syncthreads();  // qx, kx visible
      const bool jr = tx < R;
      for (int c = 0; c < kw; ++c) {
        const S kj = jr ? k_s[tx * KP + c] : S(0);
        const S gj = jr ? g_s[tx * KP + c] : S(0);
        const S hc = h_s[c * kVT + tx];
        S kx[kGkSubs - 1];
#pragma unroll
        for (int b = 1; b < kGkSubs; ++b)
          kx[b - 1] = sj < b && b * kGkSub < R ? kx_s[((b - 1) * kMaxBT + tx) * KP + c] : S(0);
#pragma unroll
        for (int i = 0; i < RPT; ++i) {
          const int t = ty + RG * i;
          const int st = i / kGkRowsPerSub;  // row t's sub-block
          if (t < R) {
            qh[i] = training_dev::gdn_fma(qg_s[t * KP + c], hc, qh[i]);
            if (st == sj) {
              if (tx <= t)
                sc[i] = training_dev::gdn_fma(
                    q_s[t * KP + c] * kj, training_dev::gdn_exp(g_s[t * KP + c] - gj, log2), sc[i]);
            } else if (st > sj) {
              sc[i] = training_dev::gdn_fma(qx_s[t * KP + c], kx[st > 0 ? st - 1 : 0], sc[i]);
            }
          }
        }
      }
      __syncthreads();  // phase 1's tiles are overwritten next (K step or phase 2)
    }
    for (int e = tid; e < R * kVT; e += kThreads) {
      const int j = e / kVT, vv = e % kVT;
      const int64_t vc = vt * kVT + vv;
      v_s[j * kVT + vv] =
          vc < V ? training_dev::gdn_load<S>(p.v, p.v_dtype, ((ch.row0 + j) * HV + hv) * V + vc)
                 : S(0);
    }
#pragma unroll
    for (int i = 0; i < RPT; ++i) {
      const int t = ty + RG * i;
      if (t < R && tx <= t) w_s[t * kMaxBT + tx] = scale * sc[i];
    }
    __syncthreads();  // A and the v_new rows
    if (col_ok) {
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        const int t = ty + RG * i;
        if (t < R) {
          S a = qh[i] * scale;
          for (int j = 0; j <= t; ++j)
            a = training_dev::gdn_fma(w_s[t * kMaxBT + j], v_s[j * kVT + tx], a);
          gk_store_o<S>(p.o, p.o_dtype, ((ch.row0 + t) * HV + hv) * V + col, a);
        }
      }
    }
    __syncthreads();  // the next item overwrites the tiles
  }
}

}  // namespace recops::ops::chunk_fwd_o_ns
