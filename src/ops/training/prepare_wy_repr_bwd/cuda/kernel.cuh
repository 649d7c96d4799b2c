// training/prepare_wy_repr_bwd/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, key head h), one block of kThreads each (grid-stride). The block walks
// dk's K dimension in tiles of kTile columns; per dk tile, for each value head hv of h's group in
// head order, with the chunk's Ai block [R, R] (shared, as S), β and e = exp(G) staged:
//  1. dAi_tj = du_t·(β_j v_j) + dw_t·(β_j e_j k_j) for t > j: 16 (t, j) elements a thread in
//     registers, over V and K tiles of kTile staged in shared memory; in the first dk tile also
//     ū = Aiᵀ du per (row, column) element, dv = β ū stored, and ū·v's row partials;
//  2. Z = Aiᵀ dAi, then dA'_tj = −(Z Aiᵀ)_tj·Γ_tj (t > j), each through registers into one shared
//     [BT, BT] buffer (a barrier between reading and overwriting);
//  3. per K tile (all of them in the first dk tile, for dβ and dG; else only the dk tile):
//     w̄ = Aiᵀ dw, M_t = Σ_{j<t} dA'_tj k_j, N_t = Σ_{t'>t} dA'_t't β_t' k_t' per (row, column);
//     dk^hv = β e w̄ + β M + N joins the group sum in registers (fp32, fp64 for fp64 k or v);
//     the rows' w̄·k, k·M, k·N partials give, after 16-lane shuffles, dβ_t = ū_t·v_t +
//     e_t (w̄_t·k_t) + k_t·M_t and dG_t = β_t e_t (w̄_t·k_t) + β_t (k_t·M_t) − k_t·N_t (the CPU's
//     Σ_j dA'_tj kk_tj terms regrouped over K, so no [BT, BT] Gram matrix is kept).
// Each output element is written by one thread: deterministic, no atomics. Steps 1 and 2 are
// recomputed per dk tile (ceil(K / kTile) times): the price of bounded shared memory for any K
// and V. Chunk slots: training/common/cuda/gdn_chunk.cuh.
#pragma once

#include <cstdint>

#include "ops/training/common/cuda/gdn_chunk.cuh"
#include "ops/training/prepare_wy_repr_bwd/cuda/tiles.h"
#include "ops/training/prepare_wy_repr_bwd/params.h"

namespace recops::ops::prepare_wy_repr_bwd_ns {

using training::gdn_cuda::gate_exp;
using training::gdn_cuda::load;
using training::gdn_cuda::SlotChunk;
using training::gdn_cuda::store;

// Shared memory (dynamic, S): Ai and the dAi / Z / dA' buffer [BT][BT + 1], two staged tiles
// [BT][kPitch], β, e, G [BT].
constexpr long long smem_elems(long long bt) {
  return 2 * bt * (bt + 1) + 2 * bt * kPitch + 3 * bt;
}

// Rows [row0, row0 + R) of a [rows, heads, D] tensor at head `head`, columns [d0, d0 + kTile),
// into dst [BT][kPitch] (zeros outside). Every thread calls it.
template <class S>
__device__ __forceinline__ void stage(const void* base, DType t, int64_t row0, int64_t R,
                                      int64_t heads, int64_t head, int64_t D, int64_t d0,
                                      int64_t BT, S* dst) {
  for (int e = threadIdx.x; e < BT * kTile; e += blockDim.x) {
    const int r = e / kTile, cc = e % kTile;
    const bool ok = r < R && d0 + cc < D;
    dst[r * kPitch + cc] = ok ? load<S>(base, t, ((row0 + r) * heads + head) * D + d0 + cc) : S(0);
  }
}

// items = slots · H; k_tiles = max(1, ceil(K / kTile)).
template <class S>
__global__ void __launch_bounds__(kThreads)
    prepare_wy_repr_bwd_kernel(const Params p, int64_t items, int64_t k_tiles) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ long long red_i[kWarps];
  const int64_t BT = p.BT, H = p.H, HV = p.HV, K = p.K, V = p.V;
  const int64_t group = HV / H, pitch = BT + 1;
  const int64_t k_real = (K + kTile - 1) / kTile;  // K tiles with columns (0 for K = 0)
  S* a_s = reinterpret_cast<S*>(smem_raw);
  S* x_s = a_s + BT * pitch;
  S* t1 = x_s + BT * pitch;
  S* t2 = t1 + BT * kPitch;
  S* b_s = t2 + BT * kPitch;
  S* e_s = b_s + BT;
  S* g_s = e_s + BT;
  const int tid = threadIdx.x;
  const int cl = tid % kTile;  // the thread's column in a tile
  const int rl = tid / kTile;  // its first row; rows rl + m·kRowStep
  constexpr int kRowStep = kThreads / kTile;
  const bool gated = p.g != nullptr;

  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t slot = item / H, h = item % H;
    const SlotChunk ch = training::gdn_cuda::slot_chunk(slot, p.T, BT, p.seq_offsets, p.off_dtype,
                                                        p.N, red_i, kWarps);
    if (ch.rows <= 0) continue;  // uniform over the block
    const int64_t R = ch.rows, row0 = ch.row0;
    for (int64_t kt = 0; kt < k_tiles; ++kt) {
      const bool first = kt == 0;
      const int64_t col = kt * kTile + cl;
      S acc[kRowsPer];  // the group sum of dk at the thread's elements
#pragma unroll
      for (int m = 0; m < kRowsPer; ++m) acc[m] = S(0);

      for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
        __syncthreads();  // the previous head's readers of a_s, x_s, b_s, e_s are done
        for (int e = tid; e < BT * BT; e += kThreads) {
          const int r = e / static_cast<int>(BT), j = e % static_cast<int>(BT);
          a_s[r * pitch + j] =
              r < R && j < R ? load<S>(p.Ai, p.Ai_dtype, ((row0 + r) * HV + hv) * BT + j) : S(0);
        }
        if (tid < BT) {
          const bool ok = tid < R;
          const int64_t at = (row0 + tid) * HV + hv;
          b_s[tid] = ok ? load<S>(p.beta, p.beta_dtype, at) : S(0);
          const S g = ok && gated ? load<S>(p.g, p.g_dtype, at) : S(0);
          g_s[tid] = g;
          e_s[tid] = !ok ? S(0) : (gated ? gate_exp(g, p.gate_log2) : S(1));
        }
        __syncthreads();

        // 1. dAi (t > j) over V and K; ū, dv and ū·v in the first dk tile.
        S pr[kPairsPer];
#pragma unroll
        for (int m = 0; m < kPairsPer; ++m) pr[m] = S(0);
        S ubv[kRowsPer];
#pragma unroll
        for (int m = 0; m < kRowsPer; ++m) ubv[m] = S(0);
        for (int64_t v0 = 0; v0 < V; v0 += kTile) {
          __syncthreads();  // the previous tile's readers are done
          stage<S>(p.du, p.du_dtype, row0, R, HV, hv, V, v0, BT, t1);
          stage<S>(p.v, p.v_dtype, row0, R, HV, hv, V, v0, BT, t2);
          __syncthreads();
#pragma unroll
          for (int m = 0; m < kPairsPer; ++m) {
            const int e = tid + m * kThreads, t = e / kMaxBT, j = e % kMaxBT;
            if (t < R && j < t) {
              S s = pr[m];
              const S bj = b_s[j];
              for (int vv = 0; vv < kTile; ++vv)
                s += t1[t * kPitch + vv] * (bj * t2[j * kPitch + vv]);
              pr[m] = s;
            }
          }
          if (first) {
#pragma unroll
            for (int m = 0; m < kRowsPer; ++m) {
              const int r = rl + m * kRowStep;
              if (r < R) {
                S ub = S(0);
                for (int t = 0; t < R; ++t) ub += a_s[t * pitch + r] * t1[t * kPitch + cl];
                if (v0 + cl < V)
                  store(p.dv, p.v_dtype, ((row0 + r) * HV + hv) * V + v0 + cl, b_s[r] * ub);
                ubv[m] += ub * t2[r * kPitch + cl];
              }
            }
          }
        }
        for (int64_t c0 = 0; c0 < K; c0 += kTile) {
          __syncthreads();
          stage<S>(p.dw, p.dw_dtype, row0, R, HV, hv, K, c0, BT, t1);
          stage<S>(p.k, p.k_dtype, row0, R, H, h, K, c0, BT, t2);
          __syncthreads();
#pragma unroll
          for (int m = 0; m < kPairsPer; ++m) {
            const int e = tid + m * kThreads, t = e / kMaxBT, j = e % kMaxBT;
            if (t < R && j < t) {
              S s = pr[m];
              const S bej = b_s[j] * e_s[j];
              for (int cc = 0; cc < kTile; ++cc)
                s += t1[t * kPitch + cc] * (bej * t2[j * kPitch + cc]);
              pr[m] = s;
            }
          }
        }
        // 2. x_s = dAi; Z = Aiᵀ dAi; x_s = Z; dA' = −(Z Aiᵀ)·Γ; x_s = dA' (t > j, zeros else).
        __syncthreads();
#pragma unroll
        for (int m = 0; m < kPairsPer; ++m) {
          const int e = tid + m * kThreads, t = e / kMaxBT, j = e % kMaxBT;
          if (t < BT && j < BT) x_s[t * pitch + j] = t < R && j < t ? pr[m] : S(0);
        }
        __syncthreads();
#pragma unroll
        for (int m = 0; m < kPairsPer; ++m) {
          const int e = tid + m * kThreads, t = e / kMaxBT, c = e % kMaxBT;
          S z = S(0);
          if (t < R && c < R)
            for (int r = c + 1; r < R; ++r) z += a_s[r * pitch + t] * x_s[r * pitch + c];
          pr[m] = z;
        }
        __syncthreads();
#pragma unroll
        for (int m = 0; m < kPairsPer; ++m) {
          const int e = tid + m * kThreads, t = e / kMaxBT, c = e % kMaxBT;
          if (t < BT && c < BT) x_s[t * pitch + c] = pr[m];
        }
        __syncthreads();
#pragma unroll
        for (int m = 0; m < kPairsPer; ++m) {
          const int e = tid + m * kThreads, t = e / kMaxBT, j = e % kMaxBT;
          S x = S(0);
          if (t < R && j < t) {
            for (int c = 0; c < R; ++c) x += x_s[t * pitch + c] * a_s[j * pitch + c];
            x = -x;
            if (gated) x *= gate_exp(g_s[t] - g_s[j], p.gate_log2);
          }
          pr[m] = x;
        }
        __syncthreads();
#pragma unroll
        for (int m = 0; m < kPairsPer; ++m) {
          const int e = tid + m * kThreads, t = e / kMaxBT, j = e % kMaxBT;
          if (t < BT && j < BT) x_s[t * pitch + j] = pr[m];
        }
        // 3. w̄, M, N per K tile; dk^hv at the dk tile; the row partials in the first dk tile.
        S wk[kRowsPer], km[kRowsPer], kn[kRowsPer];
#pragma unroll
        for (int m = 0; m < kRowsPer; ++m) wk[m] = km[m] = kn[m] = S(0);
        const int64_t ct_end = first ? k_real : (kt + 1 < k_real ? kt + 1 : k_real);
        for (int64_t ct = first ? 0 : kt; ct < ct_end; ++ct) {
          __syncthreads();  // x_s written; the previous tile's readers are done
          stage<S>(p.dw, p.dw_dtype, row0, R, HV, hv, K, ct * kTile, BT, t1);
          stage<S>(p.k, p.k_dtype, row0, R, H, h, K, ct * kTile, BT, t2);
          __syncthreads();
#pragma unroll
          for (int m = 0; m < kRowsPer; ++m) {
            const int r = rl + m * kRowStep;
            if (r < R) {
              S wb = S(0), M = S(0), N = S(0);
              for (int t = 0; t < R; ++t) wb += a_s[t * pitch + r] * t1[t * kPitch + cl];
              for (int j = 0; j < r; ++j) M += x_s[r * pitch + j] * t2[j * kPitch + cl];
              for (int t = r + 1; t < R; ++t)
                N += (x_s[t * pitch + r] * b_s[t]) * t2[t * kPitch + cl];
              const S kv = t2[r * kPitch + cl];
              if (first) {
                wk[m] += wb * kv;
                km[m] += kv * M;
                kn[m] += kv * N;
              }
              if (ct == kt) acc[m] += (b_s[r] * e_s[r]) * wb + b_s[r] * M + N;
            }
          }
        }
        if (first) {
#pragma unroll
          for (int m = 0; m < kRowsPer; ++m) {
            S u = ubv[m], w = wk[m], a = km[m], b = kn[m];
            for (int o = kTile / 2; o > 0; o >>= 1) {
              u += __shfl_xor_sync(0xffffffffu, u, o);
              w += __shfl_xor_sync(0xffffffffu, w, o);
              a += __shfl_xor_sync(0xffffffffu, a, o);
              b += __shfl_xor_sync(0xffffffffu, b, o);
            }
            const int r = rl + m * kRowStep;
            if (cl == 0 && r < R) {
              const int64_t at = (row0 + r) * HV + hv;
              store(p.dbeta, p.beta_dtype, at, u + e_s[r] * w + a);
              if (gated) p.dg[at] = static_cast<float>((b_s[r] * e_s[r]) * w + b_s[r] * a - b);
            }
          }
        }
      }
#pragma unroll
      for (int m = 0; m < kRowsPer; ++m) {
        const int r = rl + m * kRowStep;
        if (r < R && col < K) store(p.dk, p.k_dtype, ((row0 + r) * H + h) * K + col, acc[m]);
      }
    }
  }
}

}  // namespace recops::ops::prepare_wy_repr_bwd_ns
