// training/chunk_bwd_dqkwg/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, key head h), one block of kThreads each (grid-stride). A block walks
// the K dimension in tiles of kTile columns; per K tile it stages the chunk's q and k columns in
// shared memory, then for each value head hv of h's group, in head order, walks V in tiles of
// kTile, staging do, v_new, dv2 rows and h_c, dh_c [kTile, kTile] blocks, and accumulates in
// registers: ds_ij = do_i·v_j (16 (i, j) pairs a thread), h_c do_i, dh_c v_i and h_c dv2_i (4
// (row, column) elements a thread; dw in fp64, as the CPU path), and ⟨h_c, dh_c⟩. Then ds (times
// scale·Γ, lower triangle) goes to shared memory and each (row, column) element gets its
// intra-chunk terms, its value head's dq and dk are added to the group sums in registers (fp32,
// fp64 for fp64 q), dw is stored, and dg's row sums (16-lane shuffles) and its chunk-last terms
// (block sums in fp64, fixed order) are written by one thread per element: the first K tile stores
// dg, later tiles add to it (the same thread, in tile order). So every output is deterministic; no
// atomics. ds is recomputed per K tile (ceil(K / kTile) times): the price of bounded shared memory
// for any K and V.
//
// Chunk slots and their chunk numbers: training/common/cuda/gdn_chunk.cuh (fla's numbering of h
// and dh, sync-free for varlen); chunk numbers at or past NT are skipped, so unvalidated device
// offsets never index outside h or dh.
#pragma once

#include <cstdint>

#include "ops/training/chunk_bwd_dqkwg/cuda/tiles.h"
#include "ops/training/chunk_bwd_dqkwg/params.h"
#include "ops/training/common/cuda/gdn_chunk.cuh"

namespace recops::ops::chunk_bwd_dqkwg_ns {

using training::gdn_cuda::block_sum;
using training::gdn_cuda::gate_exp;
using training::gdn_cuda::load;
using training::gdn_cuda::SlotChunk;
using training::gdn_cuda::store;

// Shared memory (dynamic, S): ds [BT][BT + 1], q, k, do, v_new, dv2 [BT][kPitch], h, dh
// [kTile][kPitch], G [BT]; with dg_smem also dg's partial sums over the K tiles [HV/H][BT] (then
// dg is rounded once to fp32; without, when they do not fit, each K tile adds its fp32-rounded
// part to dg in order).
constexpr long long smem_elems(long long bt) {
  return bt * (bt + 1) + 5 * bt * kPitch + 2 * kTile * kPitch + bt;
}

// items = slots · H; k_tiles = max(1, ceil(K / kTile)) (one tile even for K = 0: dg is written).
template <class S>
__global__ void __launch_bounds__(kThreads)
    chunk_bwd_dqkwg_kernel(const Params p, int64_t items, int64_t k_tiles, bool dg_smem) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ double red_d[kWarps];
  __shared__ long long red_i[kWarps];
  const int64_t BT = p.BT, H = p.H, HV = p.HV, K = p.K, V = p.V;
  const int64_t group = HV / H;
  S* ds_s = reinterpret_cast<S*>(smem_raw);
  S* q_s = ds_s + BT * (BT + 1);
  S* k_s = q_s + BT * kPitch;
  S* do_s = k_s + BT * kPitch;
  S* v_s = do_s + BT * kPitch;
  S* d2_s = v_s + BT * kPitch;
  S* h_s = d2_s + BT * kPitch;
  S* dh_s = h_s + kTile * kPitch;
  S* g_s = dh_s + kTile * kPitch;
  S* dgp_s = g_s + BT;  // [group][BT] with dg_smem
  const int tid = threadIdx.x;
  const int cl = tid % kTile;  // the thread's column in a tile
  const int rl = tid / kTile;  // its first row; rows rl + m·(kThreads / kTile)
  constexpr int kRowStep = kThreads / kTile;
  const bool gated = p.g != nullptr, with_dw = p.dv2 != nullptr;
  const S scale = static_cast<S>(p.scale);

  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t slot = item / H, h = item % H;
    const SlotChunk ch = training::gdn_cuda::slot_chunk(slot, p.T, BT, p.seq_offsets, p.off_dtype,
                                                        p.N, red_i, kWarps);
    // h's chunks: B·NT (B = 1 with offsets); uniform over the block.
    if (ch.rows <= 0 || ch.index < 0 || ch.index >= p.B * p.NT) continue;
    const int64_t R = ch.rows, row0 = ch.row0;
    for (int64_t kt = 0; kt < k_tiles; ++kt) {
      const int64_t c0 = kt * kTile, col = c0 + cl;
      const bool col_ok = col < K;
      __syncthreads();  // the previous tile's (or item's) readers of q_s, k_s are done
      for (int e = tid; e < BT * kTile; e += kThreads) {
        const int r = e / kTile, cc = e % kTile;
        const bool ok = r < R && c0 + cc < K;
        const int64_t at = ((row0 + r) * H + h) * K + c0 + cc;
        q_s[r * kPitch + cc] = ok ? load<S>(p.q, p.q_dtype, at) : S(0);
        k_s[r * kPitch + cc] = ok ? load<S>(p.k, p.k_dtype, at) : S(0);
      }
      S acc_q[kRowsPer], acc_k[kRowsPer];  // the group sums of the thread's elements
#pragma unroll
      for (int m = 0; m < kRowsPer; ++m) acc_q[m] = acc_k[m] = S(0);

      for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
        __syncthreads();  // the previous head's readers of g_s, ds_s are done
        if (tid < BT)
          g_s[tid] = gated && tid < R ? load<S>(p.g, p.g_dtype, (row0 + tid) * HV + hv) : S(0);
        S dsp[kPairsPer], dqi[kRowsPer], dki[kRowsPer];
        double dwp[kRowsPer];
#pragma unroll
        for (int m = 0; m < kPairsPer; ++m) dsp[m] = S(0);
#pragma unroll
        for (int m = 0; m < kRowsPer; ++m) dqi[m] = dki[m] = S(0), dwp[m] = 0.0;
        S hdh = S(0);
        const int64_t hbase = (ch.index * HV + hv) * K;  // h[index, hv] row 0 (times V below)
        for (int64_t v0 = 0; v0 < V; v0 += kTile) {
          __syncthreads();  // the previous V tile's readers are done
          for (int e = tid; e < BT * kTile; e += kThreads) {
            const int r = e / kTile, vv = e % kTile;
            const bool ok = r < R && v0 + vv < V;
            const int64_t at = ((row0 + r) * HV + hv) * V + v0 + vv;
            do_s[r * kPitch + vv] = ok ? load<S>(p.d_o, p.do_dtype, at) : S(0);
            v_s[r * kPitch + vv] = ok ? load<S>(p.v, p.v_dtype, at) : S(0);
            if (with_dw) d2_s[r * kPitch + vv] = ok ? load<S>(p.dv2, p.dv2_dtype, at) : S(0);
          }
          for (int e = tid; e < kTile * kTile; e += kThreads) {
            const int cc = e / kTile, vv = e % kTile;
            const bool ok = c0 + cc < K && v0 + vv < V;
            const int64_t at = (hbase + c0 + cc) * V + v0 + vv;
            h_s[cc * kPitch + vv] = ok ? load<S>(p.h, p.h_dtype, at) : S(0);
            dh_s[cc * kPitch + vv] = ok ? load<S>(p.dh, p.dh_dtype, at) : S(0);
          }
          __syncthreads();
#pragma unroll
          for (int m = 0; m < kPairsPer; ++m) {
            const int e = tid + m * kThreads, i = e / kMaxBT, j = e % kMaxBT;
            if (i < R && j <= i) {
              S s = dsp[m];
              for (int vv = 0; vv < kTile; ++vv) s += do_s[i * kPitch + vv] * v_s[j * kPitch + vv];
              dsp[m] = s;
            }
          }
#pragma unroll
          for (int m = 0; m < kRowsPer; ++m) {
            const int r = rl + m * kRowStep;
            if (r < R) {
              S a = dqi[m], b = dki[m];
              double w = dwp[m];
              for (int vv = 0; vv < kTile; ++vv) {
                a += h_s[cl * kPitch + vv] * do_s[r * kPitch + vv];
                b += dh_s[cl * kPitch + vv] * v_s[r * kPitch + vv];
                if (with_dw)
                  w += static_cast<double>(h_s[cl * kPitch + vv]) *
                       static_cast<double>(d2_s[r * kPitch + vv]);
              }
              dqi[m] = a, dki[m] = b, dwp[m] = w;
            }
          }
          if (gated)
            for (int e = tid; e < kTile * kTile; e += kThreads) {
              const int cc = e / kTile, vv = e % kTile;
              hdh += h_s[cc * kPitch + vv] * dh_s[cc * kPitch + vv];
            }
        }
        __syncthreads();  // g_s visible (also with V = 0); the V tiles' readers are done
        const S gL = gated ? g_s[R - 1] : S(0);
#pragma unroll
        for (int m = 0; m < kPairsPer; ++m) {
          const int e = tid + m * kThreads, i = e / kMaxBT, j = e % kMaxBT;
          if (i < BT && j < BT) {
            S x = S(0);
            if (i < R && j <= i)
              x = gated ? scale * gate_exp(g_s[i] - g_s[j], p.gate_log2) * dsp[m] : scale * dsp[m];
            ds_s[i * (BT + 1) + j] = x;
          }
        }
        __syncthreads();
        S kpart = S(0), dgp[kRowsPer];
#pragma unroll
        for (int m = 0; m < kRowsPer; ++m) {
          const int r = rl + m * kRowStep;
          dgp[m] = S(0);
          if (r < R) {
            const S fq = gated ? scale * gate_exp(g_s[r], p.gate_log2) : scale;
            const S fk = gated ? gate_exp(gL - g_s[r], p.gate_log2) : S(1);
            S dq = fq * dqi[m], dk = fk * dki[m];
            // Columns past K hold zeros in q_s, k_s: they add no term to dg (not 0 · dq, which is
            // NaN when a non-finite g or v reached dq through ds).
            if (col_ok)
              kpart += k_s[r * kPitch + cl] * dk;  // the inter part of dk in dg_L's k-term
            for (int j = 0; j <= r; ++j) dq += ds_s[r * (BT + 1) + j] * k_s[j * kPitch + cl];
            for (int i = r; i < R; ++i) dk += ds_s[i * (BT + 1) + r] * q_s[i * kPitch + cl];
            if (col_ok) dgp[m] = q_s[r * kPitch + cl] * dq - k_s[r * kPitch + cl] * dk;
            acc_q[m] += dq;
            acc_k[m] += dk;
            if (with_dw && col_ok)
              store(p.dw, p.dw_dtype, ((row0 + r) * HV + hv) * K + col, -dwp[m]);
          }
        }
        if (gated) {
          const S hdh_all = static_cast<S>(block_sum(static_cast<double>(hdh), red_d, kWarps));
          const S kterm = static_cast<S>(block_sum(static_cast<double>(kpart), red_d, kWarps));
#pragma unroll
          for (int m = 0; m < kRowsPer; ++m) {
            S d = dgp[m];
            for (int o = kTile / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
            const int r = rl + m * kRowStep;
            if (cl == 0 && r < R) {
              // The state terms are sums over K × V: none when K or V is 0 (the reference's rule).
              if (r == R - 1 && K > 0 && V > 0) d += gate_exp(gL, p.gate_log2) * hdh_all + kterm;
              float* out = p.dg + (row0 + r) * HV + hv;
              if (dg_smem) {  // only this thread touches the slot, in tile order
                S* part = dgp_s + (hv - h * group) * BT + r;
                const S tot = kt == 0 ? d : *part + d;
                if (kt + 1 < k_tiles)
                  *part = tot;
                else
                  *out = static_cast<float>(tot);
              } else {
                *out = kt == 0 ? static_cast<float>(d) : *out + static_cast<float>(d);
              }
            }
          }
        }
      }
#pragma unroll
      for (int m = 0; m < kRowsPer; ++m) {
        const int r = rl + m * kRowStep;
        if (r < R && col_ok) {
          const int64_t at = ((row0 + r) * H + h) * K + col;
          store(p.dq, p.dq_dtype, at, acc_q[m]);
          store(p.dk, p.dk_dtype, at, acc_k[m]);
        }
      }
    }
  }
}

}  // namespace recops::ops::chunk_bwd_dqkwg_ns
