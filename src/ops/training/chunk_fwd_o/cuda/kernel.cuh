// training/chunk_fwd_o/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, value head hv, V tile of 64 columns); the slots are
// training/common/cuda/gdn_chunks.cuh's sync-free chunk grid (an empty slot's block goes on to its
// next item), and the chunk's number in h is fla's running chunk count (a block sum over the
// earlier sequences with seq_offsets; b·NT + c without). Thread (ty, tx) of 4 × 64 owns rows
// t = ty + 4i (i < 16, t < R) for both of its roles: the score s[t, j = tx] = q_t·k_j and the
// output column v = tx. Phase 1 walks K in slices of KT: the chunk's q and k rows at key head hv /
// (HV/H) and the slice's rows of h_c [K, V] at hv go to shared memory as S (coalesced along K and
// V), and each thread accumulates its scores and its (q_t·h_c)[v] with FMAs in K order. Phase 2
// (the same shared memory) stages w[t, j] = scale·exp(G_t − G_j)·s[t, j] for j ≤ t (exp2 with
// gate_log2; only non-positive differences), G and the v_new rows, and forms
//   o[t, v] = (q_t·h_c)[v]·scale·exp(G_t) + Σ_{j ≤ t} w[t, j]·v_new[j, v]   (j ascending)
// as the CPU path does, S = fp32 (fp64 for fp64 q), rounded once to o's dtype. Each output from
// one thread: no atomics, deterministic. A chunk numbered past h's NT (h too small for the
// offsets: the rule the entry checks when the offsets are on the host) gets NaN rows, never an
// out-of-bounds read.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "ops/training/chunk_fwd_o/cuda/tiles.h"
#include "ops/training/chunk_fwd_o/params.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_fwd_o_ns {

// TO: the C++ type of o (q's dtype). items = slots * HV * vtiles; dynamic shared memory:
// kSmemElems<S> elements of S.
template <class TO>
__global__ void __launch_bounds__(kThreads)
    chunk_fwd_o_kernel(const Params p, int64_t vtiles, int64_t items) {
  using S = std::conditional_t<std::is_same_v<TO, double>, double, float>;
  constexpr int KT = kKT<S>, KP = KT + 1, RPT = kRowsPerThread, RG = kRowGroups;
  extern __shared__ __align__(16) unsigned char fo_smem[];
  __shared__ int64_t scratch[kThreads / 32];
  S* const sm = reinterpret_cast<S*>(fo_smem);
  S* const q_s = sm;                    // phase 1: [64][KP]
  S* const k_s = sm + kMaxBT * KP;      //          [64][KP]
  S* const h_s = sm + 2 * kMaxBT * KP;  //         [KT][VT]
  S* const w_s = sm;                    // phase 2: [64][64]
  S* const v_s = sm + kMaxBT * kMaxBT;  //         [64][VT]
  S* const g_s = v_s + kMaxBT * kVT;    //         [64]
  TO* const o = static_cast<TO*>(p.o);
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT, group = HV / H;
  const S scale = static_cast<S>(p.scale);
  const bool gated = p.g != nullptr;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % kVT, ty = tid / kVT;
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
    // Without offsets idx = b·NT + c < B·NT always; with offsets (B = 1) a chunk numbered NT or
    // more means too small an h (device offsets, validation off): visible NaN, never read.
    if (p.seq_offsets && idx >= p.NT) {
      for (int i = 0; i < RPT; ++i) {
        const int t = ty + RG * i;
        if (t < R && col_ok)
          o[((ch.row0 + t) * HV + hv) * V + col] =
              training_dev::gdn_narrow<S, TO>(S(__int_as_float(0x7fc00000)));
      }
      continue;
    }
    S sc[RPT], qh[RPT];
#pragma unroll
    for (int i = 0; i < RPT; ++i) sc[i] = qh[i] = S(0);
    const int64_t hbase = (idx * HV + hv) * K * V;
    for (int64_t k0 = 0; k0 < K; k0 += KT) {
      const int kw = static_cast<int>(K - k0 < KT ? K - k0 : KT);
      for (int e = tid; e < R * KT; e += kThreads) {
        const int t = e / KT, c = e % KT;
        S qv = S(0), kv = S(0);
        if (c < kw) {
          const int64_t at = ((ch.row0 + t) * H + hk) * K + k0 + c;
          qv = training_dev::gdn_load<S>(p.q, p.q_dtype, at);
          kv = training_dev::gdn_load<S>(p.k, p.k_dtype, at);
        }
        q_s[t * KP + c] = qv;
        k_s[t * KP + c] = kv;
      }
      for (int e = tid; e < KT * kVT; e += kThreads) {
        const int c = e / kVT, vv = e % kVT;
        const int64_t hc = vt * kVT + vv;
        h_s[c * kVT + vv] =
            c < kw && hc < V ? training_dev::gdn_load<S>(p.h, p.h_dtype, hbase + (k0 + c) * V + hc)
                             : S(0);
      }
      __syncthreads();
      for (int c = 0; c < kw; ++c) {
        const S kj = tx < R ? k_s[tx * KP + c] : S(0);
        const S hc = h_s[c * kVT + tx];
#pragma unroll
        for (int i = 0; i < RPT; ++i) {
          const int t = ty + RG * i;
          if (t < R) {
            const S qv = q_s[t * KP + c];
            sc[i] = training_dev::gdn_fma(qv, kj, sc[i]);
            qh[i] = training_dev::gdn_fma(qv, hc, qh[i]);
          }
        }
      }
      __syncthreads();  // phase 1's tiles are overwritten next (K step or phase 2)
    }
    if (tid < R)
      g_s[tid] =
          gated ? training_dev::gdn_load<S>(p.g, p.g_dtype, (ch.row0 + tid) * HV + hv) : S(0);
    for (int e = tid; e < R * kVT; e += kThreads) {
      const int j = e / kVT, vv = e % kVT;
      const int64_t vc = vt * kVT + vv;
      v_s[j * kVT + vv] =
          vc < V ? training_dev::gdn_load<S>(p.v, p.v_dtype, ((ch.row0 + j) * HV + hv) * V + vc)
                 : S(0);
    }
    __syncthreads();  // g_s for the weights
#pragma unroll
    for (int i = 0; i < RPT; ++i) {
      const int t = ty + RG * i;
      if (t < R && tx <= t)
        w_s[t * kMaxBT + tx] =
            gated ? scale * training_dev::gdn_exp(g_s[t] - g_s[tx], p.gate_log2) * sc[i]
                  : scale * sc[i];
    }
    __syncthreads();
    if (col_ok) {
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        const int t = ty + RG * i;
        if (t < R) {
          const S f = gated ? scale * training_dev::gdn_exp(g_s[t], p.gate_log2) : scale;
          S a = qh[i] * f;
          for (int j = 0; j <= t; ++j)
            a = training_dev::gdn_fma(w_s[t * kMaxBT + j], v_s[j * kVT + tx], a);
          o[((ch.row0 + t) * HV + hv) * V + col] = training_dev::gdn_narrow<S, TO>(a);
        }
      }
    }
    __syncthreads();  // the next item overwrites the tiles
  }
}

}  // namespace recops::ops::chunk_fwd_o_ns
