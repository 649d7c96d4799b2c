// training/chunk_kda_bwd_wy_dqkg_fused/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, key head h), the slots being training/common/cuda/gdn_chunks.cuh's
// sync-free chunk grid (an empty slot's block goes on to its next item); h_c and dh_c are chunk
// gdn_chunk_index's (fla's running chunk number). One block per item, S = fp32 (fp64 when q is
// fp64) as the CPU path. Per value head hv of h's group, in order:
// - Akk's R×R block (upper part included) and β staged in shared memory as S.
// - V phase, over value tiles of VT columns (dv2, v staged): ū = Akkᵀ dv2 per column (t
//   ascending), dv = β ū rounded once to v's dtype, ū·v added to the row's dβ sum, and
//   dv2_t·v_j added to X_tj (j < t).
// - K phase, over key tiles of 16 columns: per tile, over value tiles (h_c, dh_c rows of the tile
//   and do, dv2, v_new staged), h_c·do_t, dh_c·v_new_t and h_c·dv2_t in registers (thread (ty, tx)
//   owns column tx and rows ty + 16r), diag(h_c dh_cᵀ) alongside; then dq = scale·e⊙(…),
//   dk1 = f⊙(…), dw = −(…) with e = exp(G), f = exp(G_L − G) (exp2 with gate_log2; only G and
//   non-positive differences are exponentiated); w̄ = Akkᵀ dw per column; dk^hv = dk1 + β e w̄,
//   dG = q dq − k dk1 + β e k w̄ (+ at L: e_L diag(h dhᵀ) + Σ_t k_t dk1_t, a column sum in row
//   order over the 16 row groups); (e⊙k)·w̄ added to dβ; dw_t·(e⊙k)_j added to X_tj (j < t).
// - dA: X_tj ×= β_j (j < t, else 0), Y = Akkᵀ X, dA_ij = −Y_i·Akk_j for j < i (0 elsewhere, all
//   BT columns of a valid row).
// dq and dk of the group: the first value head writes its term, each later one adds its term to
// the stored fp32 value in S (as the CPU path's group sums in S for fp32 arithmetic; for fp64 the
// CPU path rounds the fp64 group sum once). X is held in registers (thread t owns the entries
// (e / 64, e % 64), e = t + 256 s) across both phases. Every output element comes from one
// thread (no atomics, deterministic).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/cuda/tiles.h"
#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/params.h"
#include "ops/training/common/cuda/gdn_chunk.cuh"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns {

namespace dev = training_dev;
namespace gc = training::gdn_cuda;

template <class S>
__global__ void __launch_bounds__(kThreads)
    chunk_kda_bwd_wy_dqkg_fused_kernel(const Params p, int64_t items) {
  constexpr int VT = kVT<S>, VP = VT + 1, KT = kKT, KP = KT + 1;
  constexpr int RG2 = kThreads / VT;               // row groups of the V phase
  constexpr int RPT2 = kMaxBT / RG2;               // V-phase rows a thread
  constexpr int RPT = kMaxBT / kRG;                // K-phase rows a thread (4)
  constexpr int EPT = kMaxBT * kMaxBT / kThreads;  // X entries a thread (16)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int64_t idx_scratch[kThreads / 32];
  S* a_s = reinterpret_cast<S*>(smem_raw);  // Akk block [64, kAP]
  S* beta_s = a_s + kMaxBT * kAP;
  S* db_s = beta_s + kMaxBT;
  S* area = db_s + kMaxBT;
  // V phase
  S* vd2_s = area;  // [64, VP]
  S* vv_s = area + kMaxBT * VP;
  // K phase
  S* h_s = area;  // [KT, VP]
  S* dh_s = h_s + KT * VP;
  S* do_s = dh_s + KT * VP;  // [64, VP]
  S* d2_s = do_s + kMaxBT * VP;
  S* vn_s = d2_s + kMaxBT * VP;
  S* dw_s = vn_s + kMaxBT * VP;  // [64, KP]
  S* ek_s = dw_s + kMaxBT * KP;
  S* kd_s = ek_s + kMaxBT * KP;  // [kRG, KP]
  // dA phase
  S* xy_s = area;  // [64, kAP]
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT;
  const int64_t group = H > 0 ? HV / H : 0;
  const bool log2 = p.gate_log2;
  const S scale = static_cast<S>(p.scale);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % KT, ty = tid / KT;    // K phase
  const int tx2 = tid % VT, ty2 = tid / VT;  // V phase
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const dev::GdnItem it = dev::gdn_item(p.seq_offsets, p.off_dtype, p.N, p.T, BT, H, 1, item);
    const dev::GdnChunk& ch = it.ch;
    if (ch.len <= 0) continue;  // the same for the whole block
    const int64_t cidx = dev::gdn_chunk_index(p.seq_offsets, p.off_dtype, p.T, BT, ch, idx_scratch);
    const int R = static_cast<int>(ch.len);
    const int L = R - 1;
    const int64_t h = it.hv, row0 = ch.row0;
    if (group == 0) {  // HV = 0: dq = dk = 0
      for (int64_t e = tid; e < static_cast<int64_t>(R) * K; e += kThreads) {
        const int64_t o = ((row0 + e / K) * H + h) * K + e % K;
        p.dq[o] = 0.0f;
        p.dk[o] = 0.0f;
      }
      continue;
    }
    for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
      const bool first = hv == h * group;
      const int64_t hbase = (cidx * HV + hv) * K * V;
      for (int e = tid; e < R * R; e += kThreads) {
        const int t = e / R, j = e % R;
        a_s[t * kAP + j] = dev::gdn_load<S>(p.A, p.A_dtype, ((row0 + t) * HV + hv) * BT + j);
      }
      if (tid < R) beta_s[tid] = dev::gdn_load<S>(p.beta, p.beta_dtype, (row0 + tid) * HV + hv);
      if (tid < kMaxBT) db_s[tid] = S(0);
      S x[EPT];
#pragma unroll
      for (int s = 0; s < EPT; ++s) x[s] = S(0);
      __syncthreads();
      // ---- V phase: ū, dv, ū·v, and dv2·vᵀ into X ----
      for (int64_t v0 = 0; v0 < V; v0 += VT) {
        for (int e = tid; e < R * VT; e += kThreads) {
          const int t = e / VT, d = e % VT;
          const int64_t col = v0 + d;
          S a = S(0), b = S(0);
          if (col < V) {
            const int64_t at = ((row0 + t) * HV + hv) * V + col;
            a = dev::gdn_load<S>(p.dv2, p.dv2_dtype, at);
            b = dev::gdn_load<S>(p.v, p.v_dtype, at);
          }
          vd2_s[t * VP + d] = a;
          vv_s[t * VP + d] = b;
        }
        __syncthreads();
        const int64_t col = v0 + tx2;
#pragma unroll
        for (int r = 0; r < RPT2; ++r) {
          const int j = ty2 + RG2 * r;
          S part = S(0);
          if (j < R) {
            S ub = S(0);
            for (int t = 0; t < R; ++t)
              ub = dev::gdn_fma(a_s[t * kAP + j], vd2_s[t * VP + tx2], ub);
            if (col < V)
              gc::store(p.dv, p.v_dtype, ((row0 + j) * HV + hv) * V + col, beta_s[j] * ub);
            part = ub * vv_s[j * VP + tx2];  // 0 past V
          }
#pragma unroll
          for (int off = VT / 2; off > 0; off >>= 1)
            part += __shfl_xor_sync(0xffffffffu, part, off);
          if (tx2 == 0 && j < R) db_s[j] += part;
        }
#pragma unroll
        for (int s = 0; s < EPT; ++s) {
          const int e = tid + kThreads * s;
          const int i = e / kMaxBT, j = e % kMaxBT;
          if (i < R && j < i) {
            S sum = x[s];
            for (int d = 0; d < VT; ++d)
              sum = dev::gdn_fma(vd2_s[i * VP + d], vv_s[j * VP + d], sum);
            x[s] = sum;
          }
        }
        __syncthreads();  // the next tile overwrites the staged tiles
      }
      // ---- K phase ----
      for (int64_t k0 = 0; k0 < K; k0 += KT) {
        const int64_t col = k0 + tx;
        S sq[RPT], sk[RPT], sw[RPT];
#pragma unroll
        for (int r = 0; r < RPT; ++r) sq[r] = sk[r] = sw[r] = S(0);
        S hdh = S(0);
        for (int64_t v0 = 0; v0 < V; v0 += VT) {
          for (int e = tid; e < KT * VT; e += kThreads) {
            const int c = e / VT, d = e % VT;
            S a = S(0), b = S(0);
            if (k0 + c < K && v0 + d < V) {
              const int64_t at = hbase + (k0 + c) * V + v0 + d;
              a = dev::gdn_load<S>(p.h, p.h_dtype, at);
              b = dev::gdn_load<S>(p.dh, p.dh_dtype, at);
            }
            h_s[c * VP + d] = a;
            dh_s[c * VP + d] = b;
          }
          for (int e = tid; e < R * VT; e += kThreads) {
            const int t = e / VT, d = e % VT;
            S a = S(0), b = S(0), c = S(0);
            if (v0 + d < V) {
              const int64_t at = ((row0 + t) * HV + hv) * V + v0 + d;
              a = dev::gdn_load<S>(p.d_o, p.do_dtype, at);
              b = dev::gdn_load<S>(p.dv2, p.dv2_dtype, at);
              c = dev::gdn_load<S>(p.v_new, p.vn_dtype, at);
            }
            do_s[t * VP + d] = a;
            d2_s[t * VP + d] = b;
            vn_s[t * VP + d] = c;
          }
          __syncthreads();
          for (int d = 0; d < VT; ++d) {
            const S hc = h_s[tx * VP + d], dhc = dh_s[tx * VP + d];
            hdh = dev::gdn_fma(hc, dhc, hdh);
#pragma unroll
            for (int r = 0; r < RPT; ++r) {
              const int t = ty + kRG * r;
              if (t < R) {
                sq[r] = dev::gdn_fma(hc, do_s[t * VP + d], sq[r]);
                sw[r] = dev::gdn_fma(hc, d2_s[t * VP + d], sw[r]);
                sk[r] = dev::gdn_fma(dhc, vn_s[t * VP + d], sk[r]);
              }
            }
          }
          __syncthreads();  // the next value tile overwrites the staged tiles
        }
        // dq, dk1, dw and e⊙k of this thread's rows; dw, e⊙k to shared memory for w̄ and X.
        const bool in_k = col < K;
        S gL = S(0);
        if (in_k) gL = dev::gdn_load<S>(p.g, p.g_dtype, ((row0 + L) * HV + hv) * K + col);
        S dq[RPT], dk1[RPT], ev[RPT], qv[RPT], kv[RPT];
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
          const int t = ty + kRG * r;
          dq[r] = dk1[r] = ev[r] = qv[r] = kv[r] = S(0);
          S dw = S(0);
          if (t < R && in_k) {
            const S gt = dev::gdn_load<S>(p.g, p.g_dtype, ((row0 + t) * HV + hv) * K + col);
            const int64_t at = ((row0 + t) * H + h) * K + col;
            qv[r] = dev::gdn_load<S>(p.q, p.q_dtype, at);
            kv[r] = dev::gdn_load<S>(p.k, p.k_dtype, at);
            ev[r] = dev::gdn_exp<S>(gt, log2);
            dq[r] = scale * ev[r] * sq[r];
            dk1[r] = dev::gdn_exp<S>(gL - gt, log2) * sk[r];
            dw = -sw[r];
          }
          dw_s[t * KP + tx] = dw;
          ek_s[t * KP + tx] = ev[r] * kv[r];
        }
        __syncthreads();
        S dgv[RPT], kdk = S(0);
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
          const int t = ty + kRG * r;
          S wb = S(0);
          if (t < R)
            for (int u = 0; u < R; ++u) wb = dev::gdn_fma(a_s[u * kAP + t], dw_s[u * KP + tx], wb);
          const S b = t < R ? beta_s[t] : S(0);
          const S ek = ev[r] * kv[r];
          dgv[r] = qv[r] * dq[r] - kv[r] * dk1[r] + b * ek * wb;
          kdk += kv[r] * dk1[r];
          S part = ek * wb;
#pragma unroll
          for (int off = KT / 2; off > 0; off >>= 1)
            part += __shfl_xor_sync(0xffffffffu, part, off);
          if (tx == 0 && t < R) db_s[t] += part;
          if (t < R && in_k) {
            const int64_t o = ((row0 + t) * H + h) * K + col;
            const S dkv = dk1[r] + b * ev[r] * wb;
            p.dq[o] = static_cast<float>(first ? dq[r] : static_cast<S>(p.dq[o]) + dq[r]);
            p.dk[o] = static_cast<float>(first ? dkv : static_cast<S>(p.dk[o]) + dkv);
          }
        }
        kd_s[ty * KP + tx] = kdk;
#pragma unroll
        for (int s = 0; s < EPT; ++s) {
          const int e = tid + kThreads * s;
          const int i = e / kMaxBT, j = e % kMaxBT;
          if (i < R && j < i) {
            S sum = x[s];
            for (int c = 0; c < KT; ++c)
              sum = dev::gdn_fma(dw_s[i * KP + c], ek_s[j * KP + c], sum);
            x[s] = sum;
          }
        }
        __syncthreads();  // kd_s written
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
          const int t = ty + kRG * r;
          if (t < R && in_k) {
            S v = dgv[r];
            if (t == L) {
              S cs = S(0);
              for (int g = 0; g < kRG; ++g) cs += kd_s[g * KP + tx];
              v += dev::gdn_exp<S>(gL, log2) * hdh + cs;
            }
            p.dg[((row0 + t) * HV + hv) * K + col] = static_cast<float>(v);
          }
        }
        __syncthreads();  // the next key tile overwrites dw_s, ek_s, kd_s and the staged tiles
      }
      // ---- dA = −Akkᵀ X Akkᵀ, X strictly lower with β_j ----
#pragma unroll
      for (int s = 0; s < EPT; ++s) {
        const int e = tid + kThreads * s;
        const int i = e / kMaxBT, j = e % kMaxBT;
        xy_s[i * kAP + j] = (i < R && j < i) ? beta_s[j] * x[s] : S(0);
      }
      __syncthreads();
      S y[EPT];
#pragma unroll
      for (int s = 0; s < EPT; ++s) {  // Y[i, a] = Σ_t Akk[t, i] X[t, a]
        const int e = tid + kThreads * s;
        const int i = e / kMaxBT, a = e % kMaxBT;
        S sum = S(0);
        if (i < R && a < R)
          for (int t = 0; t < R; ++t) sum = dev::gdn_fma(a_s[t * kAP + i], xy_s[t * kAP + a], sum);
        y[s] = sum;
      }
      __syncthreads();
#pragma unroll
      for (int s = 0; s < EPT; ++s) {
        const int e = tid + kThreads * s;
        xy_s[(e / kMaxBT) * kAP + e % kMaxBT] = y[s];
      }
      __syncthreads();
#pragma unroll
      for (int s = 0; s < EPT; ++s) {
        const int e = tid + kThreads * s;
        const int i = e / kMaxBT, j = e % kMaxBT;
        if (i < R && j < BT) {
          S sum = S(0);
          if (j < i)
            for (int a = 0; a < R; ++a)
              sum = dev::gdn_fma(xy_s[i * kAP + a], a_s[j * kAP + a], sum);
          p.dA[((row0 + i) * HV + hv) * BT + j] = j < i ? static_cast<float>(-sum) : 0.0f;
        }
      }
      if (tid < R) p.dbeta[(row0 + tid) * HV + hv] = static_cast<float>(db_s[tid]);
      __syncthreads();  // the next value head overwrites a_s, beta_s, db_s and xy_s
    }
  }
}

}  // namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns
