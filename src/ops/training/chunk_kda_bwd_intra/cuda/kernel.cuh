// training/chunk_kda_bwd_intra/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, key head h), the slots being training/common/cuda/gdn_chunks.cuh's
// sync-free chunk grid (an empty slot's block goes on to its next item). One block per item,
// S = fp32 (fp64 when q is fp64) as the CPU path. Per value head hv of h's group, in order:
// dAqk's lower and dAkk's strictly lower part of the chunk and β are staged in shared memory (as
// S; the rest staged as 0, never read from global memory); then K is walked in tiles of KT
// columns (q, k at key head h and G staged as S, zero past K). Thread (ty, tx) owns column tx of
// the tile and row ty of every 16-row sub-block b, and keeps dq_i, dkl_i (row side) and dkr_i
// (column side) of its rows in registers. Per sub-block b (first row r = 16b), in order, as the
// CPU path:
// - the diagonal sub-block with Γ = e(G_i − G_j), j ≤ i, formed per pair: dq_i += dAqk_ij k_j Γ,
//   dkl_i += dAkk_ij k_j Γ (row i), dkr_j += (dAqk_ij q_i + dAkk_ij β_i k_i) Γ (column j);
// - b ≥ 1, the earlier columns j < r: with κ_j = e(G_r − G_j) and ρ_i = e(G_i − G_r) (both
//   exponents ≤ 0 for decaying gates; staged once per tile and sub-block), dq_i += ρ_i Σ_j
//   dAqk_ij (k_j κ_j), dkl_i += ρ_i Σ_j dAkk_ij (k_j κ_j) and dkr_j += κ_j Σ_{i in b}
//   (dAqk_ij q_i ρ_i + dAkk_ij β_i k_i ρ_i).
// Then per element: dg = dg_in + q dq + k (β dkl − dkr) (natural-log units) rounded once to fp32;
// the tile's part of dβ_i = k_i · dkl_i (a shuffle sum over the tile's columns, then the tiles
// in order); dq, dk of the group: the first value head writes dq_in + dq^hv (dk_in + β dkl + dkr)
// summed in fp64 and rounded to fp32, each later one adds its term to that in fp64 and rounds
// again (the CPU path rounds the fp64 group sum once; the same when HV = H). Every output element
// comes from one thread (no atomics, deterministic).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/training/chunk_kda_bwd_intra/cuda/tiles.h"
#include "ops/training/chunk_kda_bwd_intra/params.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_kda_bwd_intra_ns {

namespace dev = training_dev;

template <class S>
__global__ void __launch_bounds__(kThreads<S>)
    chunk_kda_bwd_intra_kernel(const Params p, int64_t items) {
  constexpr int KT = kKT<S>, KP = KT + 1, NT = kThreads<S>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* a_s = reinterpret_cast<S*>(smem_raw);  // dAqk, j ≤ i (row stride 64)
  S* m_s = a_s + kMaxBT * kMaxBT;           // dAkk, j < i
  S* q_s = m_s + kMaxBT * kMaxBT;           // [64, KP] tiles
  S* k_s = q_s + kMaxBT * KP;
  S* g_s = k_s + kMaxBT * KP;
  S* kap_s = g_s + kMaxBT * KP;  // κ_j, j < r: [48, KP]
  S* kk_s = kap_s + (kMaxBT - kSub) * KP;
  S* rho_s = kk_s + (kMaxBT - kSub) * KP;  // ρ_i of sub-block b: [16, KP]
  S* zq_s = rho_s + kSub * KP;
  S* zk_s = zq_s + kSub * KP;
  S* beta_s = zk_s + kSub * KP;  // [64]
  const int64_t H = p.H, HV = p.HV, K = p.K, BT = p.BT, group = HV / H;
  const bool log2 = p.gate_log2;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % KT, ty = tid / KT;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const dev::GdnItem it = dev::gdn_item(p.seq_offsets, p.off_dtype, p.N, p.T, BT, H, 1, item);
    const dev::GdnChunk& ch = it.ch;
    if (ch.len <= 0) continue;  // the same for the whole block
    const int R = static_cast<int>(ch.len);
    const int nb = (R + kSub - 1) / kSub;
    const int64_t h = it.hv, row0 = ch.row0;
    if (group == 0) {  // HV = 0: dq = dq_in, dk = dk_in
      for (int64_t e = tid; e < static_cast<int64_t>(R) * K; e += NT) {
        const int64_t o = (row0 + e / K) * H * K + h * K + e % K;
        p.dq[o] = static_cast<float>(dev::gdn_load<double>(p.dq_in, p.dq_dtype, o));
        p.dk[o] = static_cast<float>(dev::gdn_load<double>(p.dk_in, p.dk_dtype, o));
      }
      continue;
    }
    for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
      const bool first = hv == h * group;
      for (int e = tid; e < R * kMaxBT; e += NT) {
        const int i = e / kMaxBT, j = e % kMaxBT;
        const int64_t at = ((row0 + i) * HV + hv) * BT + j;
        a_s[e] = j <= i ? dev::gdn_load<S>(p.dAqk, p.dAqk_dtype, at) : S(0);
        m_s[e] = j < i ? dev::gdn_load<S>(p.dAkk, p.dAkk_dtype, at) : S(0);
      }
      if (tid < R) beta_s[tid] = dev::gdn_load<S>(p.beta, p.beta_dtype, (row0 + tid) * HV + hv);
      S db[kSubs];
#pragma unroll
      for (int b = 0; b < kSubs; ++b) db[b] = S(0);
      for (int64_t k0 = 0; k0 < K; k0 += KT) {
        for (int e = tid; e < R * KT; e += NT) {
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
        __syncthreads();  // also orders a_s, m_s, beta_s before their first read
        S dq[kSubs], dkl[kSubs], dkr[kSubs];
#pragma unroll
        for (int b = 0; b < kSubs; ++b) dq[b] = dkl[b] = dkr[b] = S(0);
#pragma unroll
        for (int b = 0; b < kSubs; ++b) {
          if (b >= nb) break;  // uniform across the block
          const int r = b * kSub, i = r + ty, rend = R < r + kSub ? R : r + kSub;
          // The diagonal sub-block, Γ per pair: row i's side, then i as a column.
          if (i < R) {
            const S gi = g_s[i * KP + tx];
            S sq = dq[b], sm = dkl[b];
            for (int j = r; j <= i; ++j) {
              const S kg = k_s[j * KP + tx] * dev::gdn_exp<S>(gi - g_s[j * KP + tx], log2);
              sq = dev::gdn_fma(a_s[i * kMaxBT + j], kg, sq);
              sm = dev::gdn_fma(m_s[i * kMaxBT + j], kg, sm);
            }
            dq[b] = sq;
            dkl[b] = sm;
            S sr = dkr[b];
            for (int i2 = i; i2 < rend; ++i2) {
              const S x = a_s[i2 * kMaxBT + i] * q_s[i2 * KP + tx] +
                          (m_s[i2 * kMaxBT + i] * beta_s[i2]) * k_s[i2 * KP + tx];
              sr = dev::gdn_fma(x, dev::gdn_exp<S>(g_s[i2 * KP + tx] - gi, log2), sr);
            }
            dkr[b] = sr;
          }
          if (b == 0) continue;
          // The earlier columns j < r: κ_j, k_j κ_j and ρ_i, q_i ρ_i, β_i k_i ρ_i (i in b).
          __syncthreads();  // the previous sub-block's readers are done with the factors
          for (int e = tid; e < r * KT; e += NT) {
            const int j = e / KT, d = e % KT;
            const S kap = dev::gdn_exp<S>(g_s[r * KP + d] - g_s[j * KP + d], log2);
            kap_s[j * KP + d] = kap;
            kk_s[j * KP + d] = k_s[j * KP + d] * kap;
          }
          for (int e = tid; e < (rend - r) * KT; e += NT) {
            const int ii = e / KT, d = e % KT, i2 = r + ii;
            const S rho = dev::gdn_exp<S>(g_s[i2 * KP + d] - g_s[r * KP + d], log2);
            rho_s[ii * KP + d] = rho;
            zq_s[ii * KP + d] = q_s[i2 * KP + d] * rho;
            zk_s[ii * KP + d] = beta_s[i2] * k_s[i2 * KP + d] * rho;
          }
          __syncthreads();
          if (i < R) {  // row side
            S sq = S(0), sm = S(0);
            for (int j = 0; j < r; ++j) {
              const S x = kk_s[j * KP + tx];
              sq = dev::gdn_fma(a_s[i * kMaxBT + j], x, sq);
              sm = dev::gdn_fma(m_s[i * kMaxBT + j], x, sm);
            }
            const S rho = rho_s[ty * KP + tx];
            dq[b] = dev::gdn_fma(rho, sq, dq[b]);
            dkl[b] = dev::gdn_fma(rho, sm, dkl[b]);
          }
#pragma unroll
          for (int bp = 0; bp < kSubs; ++bp) {  // column side: this thread's rows j < r
            if (bp < b) {
              const int j = bp * kSub + ty;
              S s = S(0);
              for (int i2 = r; i2 < rend; ++i2) {
                s = dev::gdn_fma(a_s[i2 * kMaxBT + j], zq_s[(i2 - r) * KP + tx], s);
                s = dev::gdn_fma(m_s[i2 * kMaxBT + j], zk_s[(i2 - r) * KP + tx], s);
              }
              dkr[bp] = dev::gdn_fma(kap_s[j * KP + tx], s, dkr[bp]);
            }
          }
        }
        // The tile's outputs: dg, dq and dk of the group, and its part of dβ.
        const int64_t col = k0 + tx;
#pragma unroll
        for (int b = 0; b < kSubs; ++b) {
          const int i = b * kSub + ty;
          S part = S(0);
          if (i < R && col < K) {
            const S qi = q_s[i * KP + tx], ki = k_s[i * KP + tx];
            const S x = dq[b], l = beta_s[i] * dkl[b], rr = dkr[b];
            const int64_t og = ((row0 + i) * HV + hv) * K + col;
            p.dg[og] = static_cast<float>(dev::gdn_load<S>(p.dg_in, p.dg_dtype, og) + qi * x +
                                          ki * (l - rr));
            part = ki * dkl[b];
            const int64_t o = ((row0 + i) * H + h) * K + col;
            const double pq = first ? dev::gdn_load<double>(p.dq_in, p.dq_dtype, o)
                                    : static_cast<double>(p.dq[o]);
            const double pk = first ? dev::gdn_load<double>(p.dk_in, p.dk_dtype, o)
                                    : static_cast<double>(p.dk[o]);
            p.dq[o] = static_cast<float>(pq + static_cast<double>(x));
            p.dk[o] = static_cast<float>(pk + static_cast<double>(l + rr));
          }
#pragma unroll
          for (int off = KT / 2; off > 0; off >>= 1)  // the KT lanes of row i (one warp)
            part += __shfl_xor_sync(0xffffffffu, part, off);
          db[b] += part;
        }
        __syncthreads();  // the next tile overwrites the staged tiles
      }
      if (tx == 0) {
#pragma unroll
        for (int b = 0; b < kSubs; ++b) {
          const int i = b * kSub + ty;
          if (i < R) {
            const int64_t ob = (row0 + i) * HV + hv;
            p.dbeta[ob] =
                static_cast<float>(dev::gdn_load<S>(p.dbeta_in, p.dbeta_dtype, ob) + db[b]);
          }
        }
      }
      __syncthreads();  // the next value head overwrites a_s, m_s and beta_s
    }
  }
}

}  // namespace recops::ops::chunk_kda_bwd_intra_ns
