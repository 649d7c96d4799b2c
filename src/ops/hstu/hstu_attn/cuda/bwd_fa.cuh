// hstu_attn/cuda/bwd_fa.cuh: the register-resident backward (cuda_sm80_fa): bf16 and fp16, d and
// dv multiples of 8 up to 128, 16-byte aligned rows, interval masks (causal / anti-causal / none,
// window, contexts, targets with group size, delta-q), rab with a per-head drab, GQA, attn_scale.
// The rest (fp32, larger heads, custom mask, func, a head-broadcast rab's drab, unaligned rows)
// runs on the general kernel
// (bwd.cuh). Deterministic: no atomics, every output element has one owner summing in a fixed
// order. One instantiation per element type and file (inst/bwd_fa_*.cu).
//
// HSTU has no softmax, so the backward is a plain recompute (no row statistics, no D = rowsum):
//   x = alpha (S + rab), S = Q Kᵀ;  P = M ⊙ SiLU(x);  G = M ⊙ SiLU'(x) ⊙ (dO Vᵀ) ⊙ s_i
//   dV = (s ⊙ P)ᵀ dO,  dK = alpha Gᵀ Q,  dQ = alpha G K.
// Two kernels on the caller's stream, each FlashAttention-2 shaped (mma.sync m16n8k16 with fp32
// accumulation, ldmatrix / ldmatrix.trans fragments from padded shared rows, cp.async two-stage
// pipelines, accumulators in registers for the whole loop):
// 1. Key kernel (dK, dV): a block of 4 warps owns 64 keys of one (sequence, key head), 16 per
//    warp; its K and V rows stay in shared memory. It walks the query heads of the GQA group and
//    their 64-row query tiles that see its keys (Q and dO tiles stream through the pipeline with
//    each row's valid key intervals and scale), recomputes Sᵀ = K Qᵀ and dPᵀ = V dOᵀ per warp in
//    registers, forms (s P)ᵀ and Gᵀ there, repacks them as A operands and accumulates
//    dV += (s P)ᵀ dO and dK += Gᵀ Q (dO and Q fragments by ldmatrix.trans).
// 2. Query kernel (dQ): a block owns 64 query rows of one (sequence, query head), 16 per warp,
//    Q and dO in shared memory; 64-key tiles of K and V stream through the pipeline; per tile
//    S = Q Kᵀ, dP = dO Vᵀ, G in registers, dQ += G K (K fragments by ldmatrix.trans); a per-head
//    drab = alpha G is written from the same registers (zero filled first by a small kernel).
// Tile skipping as in the forward: key / query tiles no row sees are skipped (a block-level test
// per tile, plus a direct lower bound for the causal-like masks in the key kernel), warps whose
// rows cover a whole tile skip the per-element mask, warps that see none of it skip the products.
#pragma once

#include <climits>
#include <string>

#include "core/cuda/launch.h"
#include "ops/hstu/hstu_attn/cuda/fwd_fa.cuh"
#include "ops/hstu/hstu_attn/cuda/tiles.h"
#include "recops/context.h"

namespace recops::ops::hstu_cuda {

// Keys per key-kernel block, query rows per tile (and the reverse).
constexpr int kBwT = tiles::kSm80FaBwdTile;

struct BwCfg {
  int64_t n_ktiles, n_qtiles;
  int nks, nksv;          // 16-wide k-steps of d, dv
  int ntd, ntv;           // 8-wide n-tiles of d, dv
  int dch, dvch;          // 16-byte chunks per row of d, dv
  int dch_pad, dvch_pad;  // chunks written per shared row (zero filled past d, dv)
};

// SiLU'(x) = σ(x) (1 + x (1 - σ(x))).
__device__ __forceinline__ float dsilu(float x) {
  const float sg = __fdividef(1.f, 1.f + __expf(-x));
  return sg * (1.f + x * (1.f - sg));
}

// ---- 1. key kernel (dK, dV) -----------------------------------------------------------------

template <class T>
__global__ void __launch_bounds__(kFaThreads, tiles::kSm80FaBlocksPerSm)
    hstu_bwd_fa_kv_kernel(const P p, const BwCfg cfg) {
  constexpr int kTile = kBwT * kFaLd;
  extern __shared__ __align__(128) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);
  T* sV = sK + kTile;
  T* sQ = sV + kTile;                                      // two stages
  T* sdO = sQ + 2 * kTile;                                 // two stages
  RowIv* sIv = reinterpret_cast<RowIv*>(sdO + 2 * kTile);  // [2][64]
  float* sSc = reinterpret_cast<float*>(sIv + 2 * kBwT);   // [2][64]

  // Key tiles of one (sequence, key head) are adjacent blocks (they share Q / dO in L2), first
  // tile (the most query rows under a causal mask) first.
  const int64_t tile = static_cast<int64_t>(blockIdx.x) % cfg.n_ktiles;
  const int64_t bh = static_cast<int64_t>(blockIdx.x) / cfg.n_ktiles;
  const int64_t b = bh % p.B, kh = bh / p.B;
  const Seq s = load_seq(p, b);
  const int c0 = static_cast<int>(tile * kBwT);
  if (c0 >= s.Lk) return;
  const int Lk = static_cast<int>(s.Lk), Lq = static_cast<int>(s.Lq);
  const int nk = min(kBwT, Lk - c0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float alpha = static_cast<float>(p.alpha);
  const int64_t group = p.Hq / p.Hk;
  const int kw0 = c0 + 16 * warp;  // this warp's first key

  fa_load_tile<T, kBwT>(sK, nk, cfg.dch, cfg.dch_pad, p.k,
                        [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, false); });
  fa_load_tile<T, kBwT>(sV, nk, cfg.dvch, cfg.dvch_pad, p.k,
                        [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, true); });
  cp_async_commit();  // group 0

  // Work items u = (query head of the group, query tile). A query row i sees key c only if
  // c <= r + right (r = i + Lk - Lq) when no context row exists, so the first tile is bounded.
  const int nqt = (Lq + kBwT - 1) / kBwT;
  const int64_t n_items = group * nqt;
  int qt_first = 0;
  if (s.C == 0 && p.window_right >= 0) {
    const int64_t i_min = c0 - p.window_right - (s.Lk - s.Lq);
    qt_first = static_cast<int>(clamp64(i_min, 0, s.Lq) / kBwT);
  }
  // The first item >= u that some query row of the tile sees; its rows' intervals go to stage st.
  auto next_item = [&](int64_t u, int st) {
    for (; u < n_items; ++u) {
      int qt = static_cast<int>(u % nqt);
      if (qt < qt_first) {
        u += qt_first - qt - 1;  // jump to the bound (loop adds 1)
        continue;
      }
      bool m = false;
      if (threadIdx.x < kBwT) {
        const RowIv v = row_intervals(p, s, static_cast<int64_t>(qt) * kBwT + threadIdx.x);
        sIv[st * kBwT + threadIdx.x] = v;
        m = iv_meets(v, c0, c0 + nk);
      }
      if (__syncthreads_or(m)) break;
    }
    return u;
  };
  auto load_qdo = [&](int64_t u, int st) {
    const int64_t hq = kh * group + u / nqt;
    const int i0 = static_cast<int>(u % nqt) * kBwT;
    const int nq = min(kBwT, Lq - i0);
    const T* q0 =
        static_cast<const T*>(p.q) + b * p.q_batch + (s.q0 + i0) * p.q_row + hq * p.q_head;
    const T* d0 =
        static_cast<const T*>(p.dout) + b * p.do_batch + (s.q0 + i0) * p.do_row + hq * p.do_head;
    fa_load_tile<T, kBwT>(sQ + st * kTile, nq, cfg.dch, cfg.dch_pad, p.k,
                          [&](int r) { return q0 + static_cast<int64_t>(r) * p.q_row; });
    fa_load_tile<T, kBwT>(sdO + st * kTile, nq, cfg.dvch, cfg.dvch_pad, p.k,
                          [&](int r) { return d0 + static_cast<int64_t>(r) * p.do_row; });
    if (threadIdx.x < kBwT)
      sSc[st * kBwT + threadIdx.x] = threadIdx.x < nq ? row_scale(p, s, b, i0 + threadIdx.x) : 0.f;
  };

  int64_t cur = next_item(0, 0);
  if (cur < n_items) load_qdo(cur, 0);
  cp_async_commit();  // group 1 (possibly empty)

  float dk[kFaD / 8][4], dv[kFaD / 8][4];
#pragma unroll
  for (int j = 0; j < kFaD / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      dk[j][e] = 0.f;
      dv[j][e] = 0.f;
    }

  const bool has_rab = p.rab != nullptr;
  const T* rab = static_cast<const T*>(p.rab);
  // ldmatrix lane offsets: A operands (K, V strips: rows = keys), non-transposed B (Q, dO rows,
  // k = d / dv), transposed B (dO, Q rows, k = queries).
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_col = ((lane >> 3) & 1) * 8;
  const int bt_row = (lane & 7) + ((lane >> 3) & 1) * 8, bt_col = (lane >> 4) * 8;

  int stage = 0;
  while (cur < n_items) {
    const int64_t nxt = next_item(cur + 1, stage ^ 1);
    if (nxt < n_items) load_qdo(nxt, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    const int64_t hq = kh * group + cur / nqt;
    const int i0 = static_cast<int>(cur % nqt) * kBwT;
    const RowIv* iv = sIv + stage * kBwT;
    const float* sc_row = sSc + stage * kBwT;
    // Does some query row of the tile see this warp's keys; does every row see all of them?
    bool wm = false, wc = kw0 + 16 <= Lk;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const RowIv v = iv[lane + 32 * h];
      wm = wm || iv_meets(v, kw0, min(kw0 + 16, Lk));
      wc = wc && iv_covers(v, kw0, kw0 + 16);
    }
    const bool warp_meets = __any_sync(0xffffffffu, wm);
    const bool warp_full = __all_sync(0xffffffffu, wc);
    if (warp_meets) {
      const T* tQ = sQ + stage * kTile;
      const T* tdO = sdO + stage * kTile;
      // Sᵀ = K Qᵀ (rows: the warp's 16 keys; columns: the 64 query rows of the tile).
      float st[kBwT / 8][4];
#pragma unroll
      for (int j = 0; j < kBwT / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) st[j][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < kFaD / 16; ++kk) {
        if (kk < cfg.nks) {
          uint32_t a[4];
          ldsm_x4(smem_u32(sK + (16 * warp + a_row) * kFaLd + kk * 16 + a_col), a);
#pragma unroll
          for (int np = 0; np < kBwT / 16; ++np) {
            uint32_t bf[4];
            ldsm_x4(smem_u32(tQ + (np * 16 + b_row) * kFaLd + kk * 16 + b_col), bf);
            mma_16816<T>(st[2 * np], a, bf[0], bf[1]);
            mma_16816<T>(st[2 * np + 1], a, bf[2], bf[3]);
          }
        }
      }
      // (s P)ᵀ packed as the A operand of dV += (s P)ᵀ dO (k = queries); st keeps s SiLU'(x)
      // (0 where masked) for G. Accumulator element e of n-tile j: key kw0 + g + 8 (e >> 1),
      // query i0 + 8 j + 2 t + (e & 1); n-tile j is half (j & 1) of k-step j >> 1 (A registers
      // 0/1 or 2/3).
      uint32_t pa[kBwT / 16][4];
#pragma unroll
      for (int j = 0; j < kBwT / 8; ++j) {
        float pv[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qc = 8 * j + 2 * t + (e & 1);
          const int c = kw0 + g + 8 * (e >> 1);
          const bool ok = warp_full || iv_has(iv[qc], c);
          float x = st[j][e];
          if (has_rab && ok)
            x += Elem<T>::to_f(
                rab[b * p.rab_s[0] + hq * p.rab_s[1] + static_cast<int64_t>(i0 + qc) * p.rab_s[2] +
                    static_cast<int64_t>(c) * p.rab_s[3]]);
          x *= alpha;
          const float sg = __fdividef(1.f, 1.f + __expf(-x));
          const float scl = sc_row[qc];
          pv[e] = ok ? x * sg * scl : 0.f;
          st[j][e] = ok ? sg * (1.f + x * (1.f - sg)) * scl : 0.f;
        }
        pa[j >> 1][2 * (j & 1)] = pack2<T>(pv[0], pv[1]);
        pa[j >> 1][2 * (j & 1) + 1] = pack2<T>(pv[2], pv[3]);
      }
#pragma unroll
      for (int kk = 0; kk < kBwT / 16; ++kk) {
#pragma unroll
        for (int np = 0; np < kFaD / 16; ++np) {
          if (2 * np < cfg.ntv) {
            uint32_t bf[4];
            ldsm_x4_t(smem_u32(tdO + (kk * 16 + bt_row) * kFaLd + np * 16 + bt_col), bf);
            mma_16816<T>(dv[2 * np], pa[kk], bf[0], bf[1]);
            mma_16816<T>(dv[2 * np + 1], pa[kk], bf[2], bf[3]);
          }
        }
      }
      // dPᵀ = V dOᵀ, then Gᵀ = (s SiLU'(x)) ⊙ dPᵀ packed into pa, and dK += Gᵀ Q.
      float dpt[kBwT / 8][4];
#pragma unroll
      for (int j = 0; j < kBwT / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) dpt[j][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < kFaD / 16; ++kk) {
        if (kk < cfg.nksv) {
          uint32_t a[4];
          ldsm_x4(smem_u32(sV + (16 * warp + a_row) * kFaLd + kk * 16 + a_col), a);
#pragma unroll
          for (int np = 0; np < kBwT / 16; ++np) {
            uint32_t bf[4];
            ldsm_x4(smem_u32(tdO + (np * 16 + b_row) * kFaLd + kk * 16 + b_col), bf);
            mma_16816<T>(dpt[2 * np], a, bf[0], bf[1]);
            mma_16816<T>(dpt[2 * np + 1], a, bf[2], bf[3]);
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kBwT / 8; ++j) {
        pa[j >> 1][2 * (j & 1)] = pack2<T>(st[j][0] * dpt[j][0], st[j][1] * dpt[j][1]);
        pa[j >> 1][2 * (j & 1) + 1] = pack2<T>(st[j][2] * dpt[j][2], st[j][3] * dpt[j][3]);
      }
#pragma unroll
      for (int kk = 0; kk < kBwT / 16; ++kk) {
#pragma unroll
        for (int np = 0; np < kFaD / 16; ++np) {
          if (2 * np < cfg.ntd) {
            uint32_t bf[4];
            ldsm_x4_t(smem_u32(tQ + (kk * 16 + bt_row) * kFaLd + np * 16 + bt_col), bf);
            mma_16816<T>(dk[2 * np], pa[kk], bf[0], bf[1]);
            mma_16816<T>(dk[2 * np + 1], pa[kk], bf[2], bf[3]);
          }
        }
      }
    }
    __syncthreads();  // the stage is free for the prefetch of the next iteration
    cur = nxt;
    stage ^= 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // every thread's copies into sK / sV landed (the loop may not have run)

  // dK = alpha acc, dV = acc: staged in the warp's own rows of sK / sV (only this warp read
  // them), stored with 16-byte rows.
#pragma unroll
  for (int j = 0; j < kFaD / 8; ++j) {
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int row = 16 * warp + g + 8 * u;
      if (j < cfg.ntd)
        *reinterpret_cast<uint32_t*>(sK + row * kFaLd + 8 * j + 2 * t) =
            pack2<T>(alpha * dk[j][2 * u], alpha * dk[j][2 * u + 1]);
      if (j < cfg.ntv)
        *reinterpret_cast<uint32_t*>(sV + row * kFaLd + 8 * j + 2 * t) =
            pack2<T>(dv[j][2 * u], dv[j][2 * u + 1]);
    }
  }
  __syncwarp();
  T* dk0 = static_cast<T*>(p.dk) + b * p.dk_batch + (s.k0 + c0) * p.dk_row + kh * p.dk_head;
  T* dv0 = static_cast<T*>(p.dv_out) + b * p.dv_batch + (s.k0 + c0) * p.dv_row + kh * p.dv_head;
  for (int idx = lane; idx < 16 * (cfg.dch + cfg.dvch); idx += 32) {
    const bool isk = idx < 16 * cfg.dch;
    const int w = isk ? cfg.dch : cfg.dvch;
    const int rel = isk ? idx : idx - 16 * cfg.dch;
    const int r = rel / w, x = rel - r * w;
    const int row = 16 * warp + r;
    if (row < nk) {
      if (isk)
        *reinterpret_cast<uint4*>(dk0 + static_cast<int64_t>(row) * p.dk_row + 8 * x) =
            *reinterpret_cast<const uint4*>(sK + row * kFaLd + 8 * x);
      else
        *reinterpret_cast<uint4*>(dv0 + static_cast<int64_t>(row) * p.dv_row + 8 * x) =
            *reinterpret_cast<const uint4*>(sV + row * kFaLd + 8 * x);
    }
  }
}

// ---- 2. query kernel (dQ) -------------------------------------------------------------------

template <class T>
__global__ void __launch_bounds__(kFaThreads, tiles::kSm80FaBlocksPerSm)
    hstu_bwd_fa_q_kernel(const P p, const BwCfg cfg) {
  constexpr int kTile = kBwT * kFaLd;
  extern __shared__ __align__(128) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);
  T* sdO = sQ + kTile;
  T* sK = sdO + kTile;     // two stages
  T* sV = sK + 2 * kTile;  // two stages
  __shared__ int s_lo, s_hi;

  const int64_t tile = cfg.n_qtiles - 1 - static_cast<int64_t>(blockIdx.x) % cfg.n_qtiles;
  const int64_t bh = static_cast<int64_t>(blockIdx.x) / cfg.n_qtiles;
  const int64_t b = bh % p.B, hq = bh / p.B;
  const Seq s = load_seq(p, b);
  const int64_t i0 = tile * kBwT;
  if (i0 >= s.Lq) return;
  const int nq = static_cast<int>(min64(kBwT, s.Lq - i0));
  const int64_t kh = hq / (p.Hq / p.Hk);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float alpha = static_cast<float>(p.alpha);
  const int Lk = static_cast<int>(s.Lk);
  const int wrow0 = warp * 16;

  const T* q0 = static_cast<const T*>(p.q) + b * p.q_batch + (s.q0 + i0) * p.q_row + hq * p.q_head;
  const T* d0 =
      static_cast<const T*>(p.dout) + b * p.do_batch + (s.q0 + i0) * p.do_row + hq * p.do_head;
  fa_load_tile<T, kBwT>(sQ, nq, cfg.dch, cfg.dch_pad, p.q,
                        [&](int r) { return q0 + static_cast<int64_t>(r) * p.q_row; });
  fa_load_tile<T, kBwT>(sdO, nq, cfg.dvch, cfg.dvch_pad, p.q,
                        [&](int r) { return d0 + static_cast<int64_t>(r) * p.do_row; });
  cp_async_commit();  // group 0

  // This thread's rows g and g + 8 of the warp's strip, their intervals, scales; the block span.
  int64_t irow[2];
  RowIv iv[2];
  float rs[2];
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    irow[u] = i0 + wrow0 + g + 8 * u;
    iv[u] = row_intervals(p, s, irow[u]);
    rs[u] = irow[u] < s.Lq ? row_scale(p, s, b, irow[u]) : 0.f;
  }
  if (threadIdx.x == 0) {
    s_lo = INT_MAX;
    s_hi = 0;
  }
  __syncthreads();
  {
    int lo = INT_MAX, hi = 0;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      if (iv[u].lo0 < iv[u].hi0) {
        lo = min(lo, iv[u].lo0);
        hi = max(hi, iv[u].hi0);
      }
      if (iv[u].lo1 < iv[u].hi1) {
        lo = min(lo, iv[u].lo1);
        hi = max(hi, iv[u].hi1);
      }
    }
    if (lo < hi) {
      atomicMin(&s_lo, lo);
      atomicMax(&s_hi, hi);
    }
  }
  __syncthreads();
  const int klo = s_lo, khi = s_hi;

  auto rows_vs_tile = [&](int c0, bool* meets, bool* covers) {
    const int c1 = min(c0 + kBwT, Lk);
    bool m = false, cv = c0 + kBwT <= Lk;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      m = m || iv_meets(iv[u], c0, c1);
      cv = cv && iv_covers(iv[u], c0, c0 + kBwT);
    }
    *meets = m;
    *covers = cv;
  };
  auto next_tile = [&](int c0) {
    for (; c0 < khi; c0 += kBwT) {
      bool m, cv;
      rows_vs_tile(c0, &m, &cv);
      if (__syncthreads_or(m)) break;
    }
    return c0;
  };
  auto load_kv = [&](int c0, int stage) {
    const int nk = min(kBwT, Lk - c0);
    fa_load_tile<T, kBwT>(sK + stage * kTile, nk, cfg.dch, cfg.dch_pad, p.q,
                          [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, false); });
    fa_load_tile<T, kBwT>(sV + stage * kTile, nk, cfg.dvch, cfg.dvch_pad, p.q,
                          [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, true); });
  };

  int cur = klo < khi ? next_tile(klo / kBwT * kBwT) : khi;
  if (cur < khi) load_kv(cur, 0);
  cp_async_commit();  // group 1 (possibly empty)

  float dq[kFaD / 8][4];
#pragma unroll
  for (int j = 0; j < kFaD / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) dq[j][e] = 0.f;

  const bool has_rab = p.rab != nullptr;
  const T* rab = static_cast<const T*>(p.rab);
  const int64_t rab_base = b * p.rab_s[0] + hq * p.rab_s[1];
  T* drab = static_cast<T*>(p.drab);  // per-head drab (fa_bwd_refusal refuses a broadcast one)
  const int64_t drab_base = b * p.drab_s[0] + hq * p.drab_s[1];
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_col = ((lane >> 3) & 1) * 8;
  const int bt_row = (lane & 7) + ((lane >> 3) & 1) * 8, bt_col = (lane >> 4) * 8;

  int stage = 0;
  while (cur < khi) {
    const int nxt = next_tile(cur + kBwT);
    if (nxt < khi) load_kv(nxt, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    bool meets, covers;
    rows_vs_tile(cur, &meets, &covers);
    const bool warp_meets = __any_sync(0xffffffffu, meets);
    const bool warp_full = __all_sync(0xffffffffu, covers);
    if (warp_meets) {
      const T* tK = sK + stage * kTile;
      const T* tV = sV + stage * kTile;
      float sc[kBwT / 8][4], dp[kBwT / 8][4];
#pragma unroll
      for (int j = 0; j < kBwT / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          sc[j][e] = 0.f;
          dp[j][e] = 0.f;
        }
#pragma unroll
      for (int kk = 0; kk < kFaD / 16; ++kk) {
        if (kk < cfg.nks) {
          uint32_t a[4];
          ldsm_x4(smem_u32(sQ + (wrow0 + a_row) * kFaLd + kk * 16 + a_col), a);
#pragma unroll
          for (int np = 0; np < kBwT / 16; ++np) {
            uint32_t bf[4];
            ldsm_x4(smem_u32(tK + (np * 16 + b_row) * kFaLd + kk * 16 + b_col), bf);
            mma_16816<T>(sc[2 * np], a, bf[0], bf[1]);
            mma_16816<T>(sc[2 * np + 1], a, bf[2], bf[3]);
          }
        }
      }
#pragma unroll
      for (int kk = 0; kk < kFaD / 16; ++kk) {
        if (kk < cfg.nksv) {
          uint32_t a[4];
          ldsm_x4(smem_u32(sdO + (wrow0 + a_row) * kFaLd + kk * 16 + a_col), a);
#pragma unroll
          for (int np = 0; np < kBwT / 16; ++np) {
            uint32_t bf[4];
            ldsm_x4(smem_u32(tV + (np * 16 + b_row) * kFaLd + kk * 16 + b_col), bf);
            mma_16816<T>(dp[2 * np], a, bf[0], bf[1]);
            mma_16816<T>(dp[2 * np + 1], a, bf[2], bf[3]);
          }
        }
      }
      // G on the accumulators (row g + 8 (e >> 1), key cur + 8 j + 2 t + (e & 1)), packed.
      uint32_t pg[kBwT / 16][4];
#pragma unroll
      for (int j = 0; j < kBwT / 8; ++j) {
        float gv[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = cur + 8 * j + 2 * t + (e & 1);
          const bool ok = warp_full || iv_has(iv[e >> 1], c);
          float x = sc[j][e];
          if (has_rab && ok)
            x += Elem<T>::to_f(
                rab[rab_base + irow[e >> 1] * p.rab_s[2] + static_cast<int64_t>(c) * p.rab_s[3]]);
          gv[e] = ok ? dsilu(alpha * x) * (dp[j][e] * rs[e >> 1]) : 0.f;
        }
        if (drab) {  // drab = alpha G of this head (0 where masked); keys < Lk, rows < Lq
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int c = cur + 8 * j + 2 * t;
            if (irow[u] < s.Lq && c < Lk) {
              T* dst =
                  drab + drab_base + irow[u] * p.drab_s[2] + static_cast<int64_t>(c) * p.drab_s[3];
              dst[0] = Elem<T>::from_f(alpha * gv[2 * u]);
              if (c + 1 < Lk) dst[p.drab_s[3]] = Elem<T>::from_f(alpha * gv[2 * u + 1]);
            }
          }
        }
        pg[j >> 1][2 * (j & 1)] = pack2<T>(gv[0], gv[1]);
        pg[j >> 1][2 * (j & 1) + 1] = pack2<T>(gv[2], gv[3]);
      }
#pragma unroll
      for (int kk = 0; kk < kBwT / 16; ++kk) {
#pragma unroll
        for (int np = 0; np < kFaD / 16; ++np) {
          if (2 * np < cfg.ntd) {
            uint32_t bf[4];
            ldsm_x4_t(smem_u32(tK + (kk * 16 + bt_row) * kFaLd + np * 16 + bt_col), bf);
            mma_16816<T>(dq[2 * np], pg[kk], bf[0], bf[1]);
            mma_16816<T>(dq[2 * np + 1], pg[kk], bf[2], bf[3]);
          }
        }
      }
    }
    __syncthreads();
    cur = nxt;
    stage ^= 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // every thread's copies into sQ landed (the loop may not have run)

  // dQ = alpha acc, staged in the warp's own rows of sQ.
#pragma unroll
  for (int j = 0; j < kFaD / 8; ++j) {
    if (j < cfg.ntd) {
#pragma unroll
      for (int u = 0; u < 2; ++u)
        *reinterpret_cast<uint32_t*>(sQ + (wrow0 + g + 8 * u) * kFaLd + 8 * j + 2 * t) =
            pack2<T>(alpha * dq[j][2 * u], alpha * dq[j][2 * u + 1]);
    }
  }
  __syncwarp();
  T* dq0 = static_cast<T*>(p.dq) + b * p.dq_batch + (s.q0 + i0) * p.dq_row + hq * p.dq_head;
  for (int idx = lane; idx < 16 * cfg.dch; idx += 32) {
    const int r = idx / cfg.dch, x = idx - r * cfg.dch;
    const int row = wrow0 + r;
    if (row < nq)
      *reinterpret_cast<uint4*>(dq0 + static_cast<int64_t>(row) * p.dq_row + 8 * x) =
          *reinterpret_cast<const uint4*>(sQ + row * kFaLd + 8 * x);
  }
}

// drab = 0 over its whole [B, H, Sq, Sk] extent (strided): padding, masked entries and the key
// tiles the query kernel skips; the query kernel then writes the tiles it visits.
template <class T>
__global__ void __launch_bounds__(tiles::kSm80FaDrabThreads)
    hstu_fa_drab_zero_kernel(const P p, int64_t n) {
  const int64_t H = p.rab_heads, Sq = p.Sq, Sk = p.Sk;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = idx % Sk, i = idx / Sk % Sq, h = idx / (Sk * Sq) % H, b = idx / (Sk * Sq * H);
    static_cast<T*>(p.drab)[b * p.drab_s[0] + h * p.drab_s[1] + i * p.drab_s[2] + c * p.drab_s[3]] =
        Elem<T>::from_f(0.f);
  }
}

// Why the register-resident backward cannot run this problem (empty: it can).
inline std::string fa_bwd_refusal(const P& p) {
  if (p.dtype != DType::bf16 && p.dtype != DType::fp16)
    return "cuda_sm80_fa runs bf16 and fp16 (fp32 runs on cuda_sm80)";
  if (p.mask || p.func)
    return "cuda_sm80_fa takes interval masks only (no custom mask tensor, no func); cuda_sm80 "
           "runs those";
  if (p.drab && p.rab_heads != p.Hq)
    return "cuda_sm80_fa computes drab per query head only (a head-broadcast rab's drab sums over "
           "heads); cuda_sm80 does that";
  if (p.kv_cache) return "cuda_sm80_fa has no paged-KV backward";
  if (p.d > kFaD || p.dv > kFaD || p.d % 8 != 0 || p.dv % 8 != 0)
    return detail::cat("cuda_sm80_fa needs d and dv multiples of 8 up to ", kFaD, " (got d=", p.d,
                       ", dv=", p.dv, "); cuda_sm80 runs the rest");
  if (p.Sq > (INT_MAX >> 1) || p.Sk > (INT_MAX >> 1))
    return "cuda_sm80_fa needs sequence lengths below 2^30";
  if (!bwd_rows_aligned16(p))
    return "cuda_sm80_fa needs 16-byte aligned rows of q, k, v, dout, dq, dk, dv; cuda_sm80 runs "
           "the rest";
  return {};
}

// The backward. It trusts the dispatch: its only caller is hstu_attn_bwd_cuda_fa (launch.cu),
// which core::dispatch runs right after hstu_attn_bwd_fa_accepts accepted these params
// (fa_bwd_refusal, compute capability 8.0), so the accept test runs once per call. A new caller
// must run fa_bwd_refusal first: the register tiles (d, dv <= kFaD), the per-head drab writes and
// the 16-byte copies and stores rely on what it checks.
template <class T>
Status run_bwd_fa(const P& p, const Context& ctx) {
  constexpr const char* kOp = "hstu_attn_bwd";
  BwCfg c{};
  c.n_ktiles = (p.Sk + kBwT - 1) / kBwT;
  c.n_qtiles = (p.Sq + kBwT - 1) / kBwT;
  c.nks = static_cast<int>((p.d + 15) / 16);
  c.nksv = static_cast<int>((p.dv + 15) / 16);
  c.ntd = static_cast<int>(p.d / 8);
  c.ntv = static_cast<int>(p.dv / 8);
  c.dch = c.ntd;
  c.dvch = c.ntv;
  c.dch_pad = 2 * c.nks;
  c.dvch_pad = 2 * c.nksv;
  const int64_t gk = c.n_ktiles * p.B * p.Hk, gq = c.n_qtiles * p.B * p.Hq;
  if (gk > INT_MAX || gq > INT_MAX)
    return Status(StatusCode::not_implemented,
                  detail::cat(kOp, ": cuda_sm80_fa grid too large (", gq, " blocks)"));
  const size_t tile = static_cast<size_t>(kBwT) * kFaLd * sizeof(T);
  const size_t kv_bytes = 6 * tile + 2 * kBwT * (sizeof(RowIv) + sizeof(float));
  if (p.drab) {
    constexpr int kZt = tiles::kSm80FaDrabThreads, kZmax = tiles::kSm80FaDrabMaxBlocks;
    const int64_t n = p.B * p.rab_heads * p.Sq * p.Sk;
    const int64_t blocks = (n + kZt - 1) / kZt;
    if (n > 0)
      RECOPS_RETURN_IF_ERROR(
          RECOPS_LAUNCH_KERNEL(kOp, hstu_fa_drab_zero_kernel<T>,
                               dim3(static_cast<unsigned>(blocks < kZmax ? blocks : kZmax)),
                               dim3(kZt), 0, ctx.stream, p, n));
  }
  if (gk > 0)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, hstu_bwd_fa_kv_kernel<T>,
                                                dim3(static_cast<unsigned>(gk)), dim3(kFaThreads),
                                                kv_bytes, ctx.stream, p, c));
  if (gq > 0)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, hstu_bwd_fa_q_kernel<T>,
                                                dim3(static_cast<unsigned>(gq)), dim3(kFaThreads),
                                                6 * tile, ctx.stream, p, c));
  return Status::Ok();
}

}  // namespace recops::ops::hstu_cuda
