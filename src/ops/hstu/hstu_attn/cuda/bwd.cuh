// hstu_attn/cuda/bwd.cuh: the general backward (cuda_sm80), deterministic: no atomics, every
// output element has one owner that sums in a fixed order. One instantiation per element type
// (inst_bwd_*.cu). Launches, in order on the caller's stream:
//
// 1. drab zero fill (when drab is wanted): padding, masked entries and skipped tiles are 0.
// 2. Key pass (dK, dV): a block owns (sequence, key head, bk = 16 * warps keys); it walks the
//    query heads of its GQA group and the query tiles (bq of 64/32/16) that can see its keys, and
//    per tile recomputes Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (rows = keys, one warp per 16 keys), forms
//    Pᵀ·s and Gᵀ in shared memory and accumulates dV += (P s)ᵀ dO, dK += Gᵀ Q in fp32 shared
//    accumulators. The CPU backward's pass B.
// 3. Query pass (dQ, drab per head): a block owns (sequence, query head, bq = 16 * warps rows),
//    walks the key tiles its rows see, recomputes S = Q Kᵀ and dP = dO Vᵀ, forms G, writes
//    drab = alpha G and accumulates dQ += G K. The CPU backward's pass A.
// 4. Head-broadcast drab ([B, 1, Sq, Sk] with Hq > 1): a block owns (sequence, query tile) and
//    sums G over all query heads in registers, in head order, per key tile.
#pragma once

#include <climits>

#include "core/cuda/launch.h"
#include "ops/hstu/hstu_attn/cuda/common.cuh"
#include "ops/hstu/hstu_attn/cuda/fwd.cuh"
#include "ops/hstu/hstu_attn/cuda/tiles.h"
#include "recops/context.h"

namespace recops::ops::hstu_cuda {

// ---- key pass ---------------------------------------------------------------------------------

struct BwdKCfg {
  int bk, bq;  // keys per block (16 per warp), queries per tile (64, 32 or 16)
  int dpad, dvpad;
  int ldk, ldv, ldq, ldqt, lddo, lddot, ldpt, lddk, lddv;
  size_t off_k, off_v, off_q, off_qt, off_do, off_dot, off_pt, off_gt, off_dk, off_dv, off_sc;
  int64_t n_ktiles;
  bool vec_q, vec_k, vec_v, vec_do;
};

template <class T>
__global__ void __launch_bounds__(tiles::kSm80MaxThreads)
    hstu_bwd_kv_kernel(const P p, const BwdKCfg cfg) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem + cfg.off_k);
  T* sV = reinterpret_cast<T*>(smem + cfg.off_v);
  T* sQ = reinterpret_cast<T*>(smem + cfg.off_q);
  T* sQt = reinterpret_cast<T*>(smem + cfg.off_qt);
  T* sdO = reinterpret_cast<T*>(smem + cfg.off_do);
  T* sdOt = reinterpret_cast<T*>(smem + cfg.off_dot);
  T* sPt = reinterpret_cast<T*>(smem + cfg.off_pt);
  T* sGt = reinterpret_cast<T*>(smem + cfg.off_gt);
  float* sdK = reinterpret_cast<float*>(smem + cfg.off_dk);
  float* sdV = reinterpret_cast<float*>(smem + cfg.off_dv);
  float* sSc = reinterpret_cast<float*>(smem + cfg.off_sc);

  const int64_t b = blockIdx.x % p.B;
  const int64_t tile = cfg.n_ktiles - 1 - blockIdx.x / p.B;
  const int64_t kh = blockIdx.y;
  const Seq s = load_seq(p, b);
  const int64_t c0 = tile * cfg.bk;
  if (c0 >= s.Lk) return;
  const int nk = static_cast<int>(min64(cfg.bk, s.Lk - c0));
  const int d = static_cast<int>(p.d), dv = static_cast<int>(p.dv);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float alpha = static_cast<float>(p.alpha);
  const int64_t group = p.Hq / p.Hk;

  load_tile<T>(sK, cfg.ldk, nullptr, 0, cfg.bk, nk, d, cfg.dpad, cfg.vec_k,
               [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, false); });
  load_tile<T>(sV, cfg.ldv, nullptr, 0, cfg.bk, nk, dv, cfg.dvpad, cfg.vec_v,
               [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, true); });
  for (int idx = threadIdx.x; idx < cfg.bk * cfg.lddk; idx += blockDim.x) sdK[idx] = 0.f;
  for (int idx = threadIdx.x; idx < cfg.bk * cfg.lddv; idx += blockDim.x) sdV[idx] = 0.f;

  const int row0 = warp * 16;  // the warp's keys
  const int nt = cfg.bq / 8;
  for (int64_t hq = kh * group; hq < (kh + 1) * group; ++hq) {
    for (int64_t qt = 0; qt < s.Lq; qt += cfg.bq) {
      const int nqv = static_cast<int>(min64(cfg.bq, s.Lq - qt));
      bool meets = false, covers = true;
      for (int r = threadIdx.x; r < nqv; r += blockDim.x) {
        const RowRange rr = row_vs_keys(p, s, b, hq, qt + r, c0, c0 + nk);
        meets = meets || rr.meets;
        covers = covers && rr.covers;
      }
      if (!__syncthreads_or(meets)) continue;
      const bool full = __syncthreads_and(covers);
      load_tile<T>(sQ, cfg.ldq, sQt, cfg.ldqt, cfg.bq, nqv, d, cfg.dpad, cfg.vec_q, [&](int r) {
        return static_cast<const T*>(p.q) + b * p.q_batch + (s.q0 + qt + r) * p.q_row +
               hq * p.q_head;
      });
      load_tile<T>(sdO, cfg.lddo, sdOt, cfg.lddot, cfg.bq, nqv, dv, cfg.dvpad, cfg.vec_do,
                   [&](int r) {
                     return static_cast<const T*>(p.dout) + b * p.do_batch +
                            (s.q0 + qt + r) * p.do_row + hq * p.do_head;
                   });
      for (int r = threadIdx.x; r < cfg.bq; r += blockDim.x)
        sSc[r] = r < nqv ? row_scale(p, s, b, qt + r) : 0.f;
      __syncthreads();

      float st[8][4], dpt[8][4];
      acc_zero(st);
      acc_zero(dpt);
      warp_mma<T>(st, sK + row0 * cfg.ldk, cfg.ldk, sQ, cfg.ldq, cfg.dpad, nt);
      warp_mma<T>(dpt, sV + row0 * cfg.ldv, cfg.ldv, sdO, cfg.lddo, cfg.dvpad, nt);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (j >= nt) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int krow = row0 + g + 8 * h;
          const int64_t c = c0 + krow;
          float pv[2], gv[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int qcol = 8 * j + 2 * t + e;
            const int64_t i = qt + qcol;
            pv[e] = 0.f;
            gv[e] = 0.f;
            if (krow < nk && qcol < nqv && (full || elem_valid(p, s, b, hq, i, c))) {
              float x = st[j][2 * h + e];
              if (p.rab)
                x += load_any(p.rab, p.dtype,
                              b * p.rab_s[0] + hq * p.rab_s[1] + i * p.rab_s[2] + c * p.rab_s[3]);
              x *= alpha;
              const float sg = sigmoidf_fast(x), sc = sSc[qcol];
              pv[e] = x * sg * sc;
              gv[e] = sg * (1.f + x * (1.f - sg)) * (dpt[j][2 * h + e] * sc);
            }
          }
          store_pair<T>(sPt + krow * cfg.ldpt + 8 * j + 2 * t, pv[0], pv[1]);
          store_pair<T>(sGt + krow * cfg.ldpt + 8 * j + 2 * t, gv[0], gv[1]);
        }
      }
      __syncwarp();
      warp_mma_wide<T>(sdV + row0 * cfg.lddv, cfg.lddv, sPt + row0 * cfg.ldpt, cfg.ldpt, sdOt,
                       cfg.lddot, cfg.bq, cfg.dvpad);
      warp_mma_wide<T>(sdK + row0 * cfg.lddk, cfg.lddk, sGt + row0 * cfg.ldpt, cfg.ldpt, sQt,
                       cfg.ldqt, cfg.bq, cfg.dpad);
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < nk * d; idx += blockDim.x) {
    const int r = idx / d, x = idx - r * d;
    T* o = static_cast<T*>(p.dk) + b * p.dk_batch + (s.k0 + c0 + r) * p.dk_row + kh * p.dk_head;
    o[x] = Elem<T>::from_f(alpha * sdK[r * cfg.lddk + x]);
  }
  for (int idx = threadIdx.x; idx < nk * dv; idx += blockDim.x) {
    const int r = idx / dv, x = idx - r * dv;
    T* o = static_cast<T*>(p.dv_out) + b * p.dv_batch + (s.k0 + c0 + r) * p.dv_row + kh * p.dv_head;
    o[x] = Elem<T>::from_f(sdV[r * cfg.lddv + x]);
  }
}

// ---- query pass and head-broadcast drab -------------------------------------------------------

struct BwdQCfg {
  int bq, bk;  // query rows per block (16 per warp), keys per tile (64, 32 or 16)
  int dpad, dvpad;
  int ldq, lddo, ldk, ldkt, ldv, ldg, lddq;
  size_t off_q, off_do, off_k, off_kt, off_v, off_g, off_dq;
  int64_t n_qtiles;
  bool vec_q, vec_k, vec_v, vec_do;
  bool write_drab;  // drab per query head (or Hq == 1): written by the query pass
};

// S and dP strips of one warp for (head hq, key tile at c0) -> G (masked entries 0), in the C
// layout; returns it in gacc. sQ/sdO hold the head's query rows, sK/sV the key tile.
template <class T>
__device__ __forceinline__ void g_strip(const P& p, const Seq& s, int64_t b, int64_t hq, int64_t i0,
                                        int nq, int64_t c0, int nk, bool full, const BwdQCfg& cfg,
                                        const T* sQ, const T* sdO, const T* sK, const T* sV,
                                        float (&gacc)[8][4]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int row0 = warp * 16, nt = cfg.bk / 8;
  const float alpha = static_cast<float>(p.alpha);
  float dp[8][4];
  acc_zero(gacc);
  acc_zero(dp);
  warp_mma<T>(gacc, sQ + row0 * cfg.ldq, cfg.ldq, sK, cfg.ldk, cfg.dpad, nt);
  warp_mma<T>(dp, sdO + row0 * cfg.lddo, cfg.lddo, sV, cfg.ldv, cfg.dvpad, nt);
  float sc[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + g + 8 * h;
    sc[h] = row < nq ? row_scale(p, s, b, i0 + row) : 0.f;
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if (j >= nt) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + g + 8 * h;
      const int64_t i = i0 + row;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = 8 * j + 2 * t + e;
        const int64_t c = c0 + col;
        float gv = 0.f;
        if (row < nq && col < nk && (full || elem_valid(p, s, b, hq, i, c))) {
          float x = gacc[j][2 * h + e];
          if (p.rab)
            x += load_any(p.rab, p.dtype,
                          b * p.rab_s[0] + hq * p.rab_s[1] + i * p.rab_s[2] + c * p.rab_s[3]);
          x *= alpha;
          const float sg = sigmoidf_fast(x);
          gv = sg * (1.f + x * (1.f - sg)) * (dp[j][2 * h + e] * sc[h]);
        }
        gacc[j][2 * h + e] = gv;
      }
    }
  }
}

// Writes alpha * gacc into drab head hr for the rows < nq, keys < nk of the tile.
template <class T>
__device__ __forceinline__ void store_drab(const P& p, int64_t b, int64_t hr, int64_t i0, int nq,
                                           int64_t c0, int nk, int nt, const float (&gacc)[8][4]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float alpha = static_cast<float>(p.alpha);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if (j >= nt) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = warp * 16 + g + 8 * h;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = 8 * j + 2 * t + e;
        if (row < nq && col < nk)
          static_cast<T*>(p.drab)[b * p.drab_s[0] + hr * p.drab_s[1] + (i0 + row) * p.drab_s[2] +
                                  (c0 + col) * p.drab_s[3]] =
              Elem<T>::from_f(alpha * gacc[j][2 * h + e]);
      }
    }
  }
}

template <class T>
__device__ __forceinline__ void load_q_do(const P& p, const Seq& s, int64_t b, int64_t hq,
                                          int64_t i0, int nq, const BwdQCfg& cfg, T* sQ, T* sdO) {
  load_tile<T>(sQ, cfg.ldq, nullptr, 0, cfg.bq, nq, static_cast<int>(p.d), cfg.dpad, cfg.vec_q,
               [&](int r) {
                 return static_cast<const T*>(p.q) + b * p.q_batch + (s.q0 + i0 + r) * p.q_row +
                        hq * p.q_head;
               });
  load_tile<T>(sdO, cfg.lddo, nullptr, 0, cfg.bq, nq, static_cast<int>(p.dv), cfg.dvpad, cfg.vec_do,
               [&](int r) {
                 return static_cast<const T*>(p.dout) + b * p.do_batch +
                        (s.q0 + i0 + r) * p.do_row + hq * p.do_head;
               });
}

template <class T>
__device__ __forceinline__ void load_k_v(const P& p, const Seq& s, int64_t b, int64_t kh,
                                         int64_t c0, int nk, const BwdQCfg& cfg, T* sK, T* sKt,
                                         T* sV) {
  load_tile<T>(sK, cfg.ldk, sKt, cfg.ldkt, cfg.bk, nk, static_cast<int>(p.d), cfg.dpad, cfg.vec_k,
               [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, false); });
  load_tile<T>(sV, cfg.ldv, nullptr, 0, cfg.bk, nk, static_cast<int>(p.dv), cfg.dvpad, cfg.vec_v,
               [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, true); });
}

template <class T>
__global__ void __launch_bounds__(tiles::kSm80MaxThreads)
    hstu_bwd_q_kernel(const P p, const BwdQCfg cfg) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem + cfg.off_q);
  T* sdO = reinterpret_cast<T*>(smem + cfg.off_do);
  T* sK = reinterpret_cast<T*>(smem + cfg.off_k);
  T* sKt = reinterpret_cast<T*>(smem + cfg.off_kt);
  T* sV = reinterpret_cast<T*>(smem + cfg.off_v);
  T* sG = reinterpret_cast<T*>(smem + cfg.off_g);
  float* sdQ = reinterpret_cast<float*>(smem + cfg.off_dq);
  __shared__ long long s_lo, s_hi;

  const int64_t b = blockIdx.x % p.B;
  const int64_t tile = cfg.n_qtiles - 1 - blockIdx.x / p.B;
  const int64_t hq = blockIdx.y;
  const Seq s = load_seq(p, b);
  const int64_t i0 = tile * cfg.bq;
  if (i0 >= s.Lq) return;
  const int nq = static_cast<int>(min64(cfg.bq, s.Lq - i0));
  const int64_t kh = hq / (p.Hq / p.Hk);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int row0 = warp * 16, nt = cfg.bk / 8;
  const int d = static_cast<int>(p.d);

  load_q_do<T>(p, s, b, hq, i0, nq, cfg, sQ, sdO);
  for (int idx = threadIdx.x; idx < cfg.bq * cfg.lddq; idx += blockDim.x) sdQ[idx] = 0.f;
  if (threadIdx.x == 0) {
    s_lo = LLONG_MAX;
    s_hi = 0;
  }
  __syncthreads();
  {
    long long lo = LLONG_MAX, hi = 0;
    for (int r = threadIdx.x; r < nq; r += blockDim.x) {
      int64_t a, e;
      row_span(p, s, b, hq, i0 + r, &a, &e);
      if (a < e) {
        lo = a < lo ? a : lo;
        hi = e > hi ? e : hi;
      }
    }
    if (lo < hi) {
      atomicMin(&s_lo, lo);
      atomicMax(&s_hi, hi);
    }
  }
  __syncthreads();
  const int64_t klo = s_lo, khi = s_hi;
  for (int64_t c0 = klo < khi ? klo / cfg.bk * cfg.bk : khi; c0 < khi; c0 += cfg.bk) {
    const int nk = static_cast<int>(min64(cfg.bk, s.Lk - c0));
    bool meets = false, covers = true;
    for (int r = threadIdx.x; r < nq; r += blockDim.x) {
      const RowRange rr = row_vs_keys(p, s, b, hq, i0 + r, c0, c0 + nk);
      meets = meets || rr.meets;
      covers = covers && rr.covers;
    }
    if (!__syncthreads_or(meets)) continue;
    const bool full = __syncthreads_and(covers);
    load_k_v<T>(p, s, b, kh, c0, nk, cfg, sK, sKt, sV);
    __syncthreads();
    float gacc[8][4];
    g_strip<T>(p, s, b, hq, i0, nq, c0, nk, full, cfg, sQ, sdO, sK, sV, gacc);
    if (cfg.write_drab) store_drab<T>(p, b, hq, i0, nq, c0, nk, nt, gacc);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (j >= nt) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        store_pair<T>(sG + (row0 + g + 8 * h) * cfg.ldg + 8 * j + 2 * t, gacc[j][2 * h],
                      gacc[j][2 * h + 1]);
    }
    __syncwarp();
    warp_mma_wide<T>(sdQ + row0 * cfg.lddq, cfg.lddq, sG + row0 * cfg.ldg, cfg.ldg, sKt, cfg.ldkt,
                     cfg.bk, cfg.dpad);
  }
  __syncthreads();
  const float alpha = static_cast<float>(p.alpha);
  for (int idx = threadIdx.x; idx < nq * d; idx += blockDim.x) {
    const int r = idx / d, x = idx - r * d;
    T* o = static_cast<T*>(p.dq) + b * p.dq_batch + (s.q0 + i0 + r) * p.dq_row + hq * p.dq_head;
    o[x] = Elem<T>::from_f(alpha * sdQ[r * cfg.lddq + x]);
  }
}

// Head-broadcast drab: sum over the query heads of G, head order fixed.
template <class T>
__global__ void __launch_bounds__(tiles::kSm80MaxThreads)
    hstu_bwd_drab_bcast_kernel(const P p, const BwdQCfg cfg) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem + cfg.off_q);
  T* sdO = reinterpret_cast<T*>(smem + cfg.off_do);
  T* sK = reinterpret_cast<T*>(smem + cfg.off_k);
  T* sKt = reinterpret_cast<T*>(smem + cfg.off_kt);
  T* sV = reinterpret_cast<T*>(smem + cfg.off_v);

  const int64_t b = blockIdx.x % p.B;
  const int64_t tile = cfg.n_qtiles - 1 - blockIdx.x / p.B;
  const Seq s = load_seq(p, b);
  const int64_t i0 = tile * cfg.bq;
  if (i0 >= s.Lq) return;
  const int nq = static_cast<int>(min64(cfg.bq, s.Lq - i0));
  const int nt = cfg.bk / 8;
  const int64_t group = p.Hq / p.Hk;
  for (int64_t c0 = 0; c0 < s.Lk; c0 += cfg.bk) {
    const int nk = static_cast<int>(min64(cfg.bk, s.Lk - c0));
    float gsum[8][4];
    acc_zero(gsum);
    for (int64_t hq = 0; hq < p.Hq; ++hq) {
      bool meets = false, covers = true;
      for (int r = threadIdx.x; r < nq; r += blockDim.x) {
        const RowRange rr = row_vs_keys(p, s, b, hq, i0 + r, c0, c0 + nk);
        meets = meets || rr.meets;
        covers = covers && rr.covers;
      }
      if (!__syncthreads_or(meets)) continue;
      const bool full = __syncthreads_and(covers);
      load_q_do<T>(p, s, b, hq, i0, nq, cfg, sQ, sdO);
      load_k_v<T>(p, s, b, hq / group, c0, nk, cfg, sK, sKt, sV);
      __syncthreads();
      float gacc[8][4];
      g_strip<T>(p, s, b, hq, i0, nq, c0, nk, full, cfg, sQ, sdO, sK, sV, gacc);
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) gsum[j][e] += gacc[j][e];
    }
    store_drab<T>(p, b, 0, i0, nq, c0, nk, nt, gsum);
  }
}

// drab = 0 over its whole [B, Hr, Sq, Sk] extent (strided).
template <class T>
__global__ void __launch_bounds__(tiles::kSm80DrabThreads)
    hstu_drab_zero_kernel(const P p, int64_t n) {
  const int64_t H = p.rab_heads, Sq = p.Sq, Sk = p.Sk;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n;
       idx += int64_t{gridDim.x} * blockDim.x) {
    int64_t rem = idx;
    const int64_t c = rem % Sk;
    rem /= Sk;
    const int64_t i = rem % Sq;
    rem /= Sq;
    const int64_t h = rem % H;
    const int64_t b = rem / H;
    static_cast<T*>(p.drab)[b * p.drab_s[0] + h * p.drab_s[1] + i * p.drab_s[2] + c * p.drab_s[3]] =
        Elem<T>::from_f(0.f);
  }
}

template <class T>
Status run_bwd(const P& p, const Context& ctx) {
  constexpr const char* kOp = "hstu_attn_bwd";
  const size_t es = sizeof(T);
  size_t limit = 0;
  RECOPS_RETURN_IF_ERROR(smem_limit(&limit));
  const int dpad = round_up(p.d, 16), dvpad = round_up(p.dv, 16);
  const bool vq = q_vec(p, es), vk = k_vec(p, es), vv = v_vec(p, es);
  const bool vdo = rows_aligned16(p.dout, es, {p.do_batch, p.do_row, p.do_head});
  if (p.Hq > 65535)
    return Status(StatusCode::not_implemented, detail::cat(kOp, ": cuda_sm80 needs Hq <= 65535"));

  // 1. drab zero fill.
  if (p.drab) {
    constexpr int kZt = tiles::kSm80DrabThreads;
    const int64_t n = p.B * p.rab_heads * p.Sq * p.Sk;
    if (n > 0) {
      unsigned grid = 1;
      RECOPS_RETURN_IF_ERROR(
          core::cuda::persistent_grid(reinterpret_cast<const void*>(&hstu_drab_zero_kernel<T>), kZt,
                                      0, (n + kZt - 1) / kZt, &grid));
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, hstu_drab_zero_kernel<T>, dim3(grid),
                                                  dim3(kZt), 0, ctx.stream, p, n));
    }
  }

  // 2. Key pass.
  {
    BwdKCfg c{};
    c.dpad = dpad;
    c.dvpad = dvpad;
    size_t bytes = 0;
    bool fits = false;
    for (int warps : tiles::kSm80Warps) {
      for (int bq : tiles::kSm80BwdStreamTiles) {
        c.bk = 16 * warps;
        c.bq = bq;
        c.ldk = c.ldq = dpad + 8;
        c.ldv = c.lddo = dvpad + 8;
        c.ldqt = c.lddot = c.ldpt = bq + 8;
        c.lddk = dpad + 4;
        c.lddv = dvpad + 4;
        SmemPlan plan;
        c.off_k = plan.take(c.bk * c.ldk * es);
        c.off_v = plan.take(c.bk * c.ldv * es);
        c.off_q = plan.take(bq * c.ldq * es);
        c.off_qt = plan.take(dpad * c.ldqt * es);
        c.off_do = plan.take(bq * c.lddo * es);
        c.off_dot = plan.take(dvpad * c.lddot * es);
        c.off_pt = plan.take(c.bk * c.ldpt * es);
        c.off_gt = plan.take(c.bk * c.ldpt * es);
        c.off_dk = plan.take(c.bk * c.lddk * sizeof(float));
        c.off_dv = plan.take(c.bk * c.lddv * sizeof(float));
        c.off_sc = plan.take(bq * sizeof(float));
        bytes = plan.bytes;
        if (bytes <= limit) {
          fits = true;
          break;
        }
      }
      if (fits) break;
    }
    if (!fits)
      return Status(StatusCode::not_implemented,
                    detail::cat(kOp, ": cuda_sm80 needs ", bytes, " bytes of shared memory for d=",
                                p.d, ", dv=", p.dv, " but the device allows ", limit));
    c.n_ktiles = (p.Sk + c.bk - 1) / c.bk;
    c.vec_q = vq;
    c.vec_k = vk;
    c.vec_v = vv;
    c.vec_do = vdo;
    const int64_t gx = c.n_ktiles * p.B;
    if (gx > INT_MAX)
      return Status(StatusCode::not_implemented, detail::cat(kOp, ": cuda_sm80 grid too large"));
    if (gx > 0)
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(
          kOp, hstu_bwd_kv_kernel<T>, dim3(static_cast<unsigned>(gx), static_cast<unsigned>(p.Hk)),
          dim3(c.bk * 2), bytes, ctx.stream, p, c));
  }

  // 3. Query pass, 4. broadcast drab.
  BwdQCfg c{};
  c.dpad = dpad;
  c.dvpad = dvpad;
  size_t bytes = 0;
  bool fits = false;
  for (int warps : tiles::kSm80Warps) {
    for (int bk : tiles::kSm80BwdStreamTiles) {
      c.bq = 16 * warps;
      c.bk = bk;
      c.ldq = c.ldk = dpad + 8;
      c.lddo = c.ldv = dvpad + 8;
      c.ldkt = c.ldg = bk + 8;
      c.lddq = dpad + 4;
      SmemPlan plan;
      c.off_q = plan.take(c.bq * c.ldq * es);
      c.off_do = plan.take(c.bq * c.lddo * es);
      c.off_k = plan.take(bk * c.ldk * es);
      c.off_kt = plan.take(dpad * c.ldkt * es);
      c.off_v = plan.take(bk * c.ldv * es);
      c.off_g = plan.take(c.bq * c.ldg * es);
      c.off_dq = plan.take(c.bq * c.lddq * sizeof(float));
      bytes = plan.bytes;
      if (bytes + 64 <= limit) {
        fits = true;
        break;
      }
    }
    if (fits) break;
  }
  if (!fits)
    return Status(StatusCode::not_implemented,
                  detail::cat(kOp, ": cuda_sm80 needs ", bytes, " bytes of shared memory for d=",
                              p.d, ", dv=", p.dv, " but the device allows ", limit));
  c.n_qtiles = (p.Sq + c.bq - 1) / c.bq;
  c.vec_q = vq;
  c.vec_k = vk;
  c.vec_v = vv;
  c.vec_do = vdo;
  const bool bcast = p.drab && p.rab_heads == 1 && p.Hq > 1;
  c.write_drab = p.drab && !bcast;
  const int64_t gx = c.n_qtiles * p.B;
  if (gx > INT_MAX)
    return Status(StatusCode::not_implemented, detail::cat(kOp, ": cuda_sm80 grid too large"));
  if (gx == 0) return Status::Ok();
  RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(
      kOp, hstu_bwd_q_kernel<T>, dim3(static_cast<unsigned>(gx), static_cast<unsigned>(p.Hq)),
      dim3(c.bq * 2), bytes, ctx.stream, p, c));
  if (bcast)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, hstu_bwd_drab_bcast_kernel<T>,
                                                dim3(static_cast<unsigned>(gx)), dim3(c.bq * 2),
                                                bytes, ctx.stream, p, c));
  return Status::Ok();
}

}  // namespace recops::ops::hstu_cuda
