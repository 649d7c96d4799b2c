// hstu_attn/cuda/fwd_fa.cuh: the register-resident forward (cuda_sm80_fa): bf16 and fp16, d and
// dv multiples of 8 up to 128, 16-byte aligned rows, interval masks (causal / anti-causal / none,
// window, contexts, targets with group size, delta-q), rab, GQA, paged KV, attn_scale. A custom
// mask tensor or func, fp32, larger heads and unaligned rows run on the general kernel (fwd.cuh).
// One instantiation per element type and file (inst/fwd_fa_*.cu).
//
// FlashAttention-2 structure without the softmax bookkeeping (HSTU has none): a block of 4 warps
// owns 64 kM query rows of one (sequence, query head); each warp owns 16 kM rows (kM m16
// fragments; kM = 2, the template keeps kM = 1 compilable for comparisons). Q is copied to shared
// memory once. Key tiles of 64 / kM rows stream through a two-stage cp.async pipeline (K and V, row
// stride d + 8 padded elements so that the 8 row addresses of every ldmatrix fall into distinct
// banks). Per tile and warp:
//   S = Q Kᵀ      mma.sync m16n8k16, Q and K fragments by ldmatrix (each K fragment serves the
//                 warp's kM row fragments), fp32 accumulators in registers;
//   P = M ⊙ SiLU(alpha (S + rab)) on the accumulators, the mask from each row's valid key
//                 intervals (the CPU kernel's interval logic, at most two per row), P rounded to
//                 bf16/fp16 and repacked in registers as the A operand;
//   O += P V      V fragments by ldmatrix.trans, O in fp32 registers for the whole key loop.
// Key tiles that no row of the block sees are skipped (the rows' key span, then a per-tile
// test); a warp whose rows all see a whole tile skips the mask; a warp whose rows see none of
// it skips the tile's products. The query tiles of one (sequence, head) are adjacent blocks,
// last (longest causal rows) first, so that they share K/V in L2. The output is scaled per row,
// staged through the warp's own rows of the Q buffer and written with 16-byte stores.
#pragma once

#include <climits>
#include <string>

#include "core/cuda/launch.h"
#include "core/cuda/mma.cuh"
#include "ops/hstu/hstu_attn/cuda/common.cuh"
#include "ops/hstu/hstu_attn/cuda/tiles.h"
#include "recops/context.h"

namespace recops::ops::hstu_cuda {

constexpr int kFaD = tiles::kSm80FaMaxHead;  // largest d and dv served
constexpr int kFaLd = kFaD + 8;              // shared row stride (elements)
constexpr int kFaThreads = tiles::kSm80FaThreads;

struct FaCfg {
  int64_t n_qtiles;
  int nks;                // 16-wide k-steps of d
  int ntv;                // 8-wide n-tiles of dv
  int dch, dvch;          // 16-byte chunks per row of d, dv
  int dch_pad, dvch_pad;  // chunks written per row (zero filled past d, dv)
};

using core::cuda::cp_async16;
using core::cuda::cp_async_commit;
using core::cuda::cp_async_wait;
using core::cuda::ldsm_x4;
using core::cuda::ldsm_x4_t;
using core::cuda::smem_u32;

// SiLU as x / (1 + e^-x): two MUFU ops (ex2, rcp), relative error near fp32's. (The one-op
// form h + h tanh(h), h = x / 2, loses accuracy for x << 0, where 1 + tanh cancels.)
__device__ __forceinline__ float silu_fast(float x) {
  return __fdividef(x, 1.f + __expf(-x));
}

// Copies 64 rows (r < nvalid from rowptr(r), chunks x < nch of 8 elements) into a [64][kFaLd]
// tile with cp.async; chunks nch .. nch_pad-1 and rows past nvalid are zero filled. Thread
// (tid) handles chunk tid % 16 of rows tid / 16 + 8 k.
template <class T, int kRows, class RowPtr>
__device__ __forceinline__ void fa_load_tile(T* dst, int nvalid, int nch, int nch_pad,
                                             const void* any_valid, RowPtr rowptr) {
  const int x = threadIdx.x & 15;
  if (x >= nch_pad) return;
#pragma unroll
  for (int k = 0; k < kRows / 8; ++k) {
    const int r = (threadIdx.x >> 4) + 8 * k;
    const bool ok = r < nvalid && x < nch;
    const void* src = ok ? static_cast<const void*>(rowptr(r) + 8 * x) : any_valid;
    cp_async16(smem_u32(dst + r * kFaLd + 8 * x), src, ok);
  }
}

// kM: m16 fragments (16 query rows each) per warp; the block holds 64 kM rows and key tiles of
// 64 / kM rows (kM = 2 shares every K/V fragment between two row fragments: half the ldmatrix
// traffic per mma, at the cost of registers).
template <class T, int kM>
__global__ void __launch_bounds__(kFaThreads, tiles::kSm80FaBlocksPerSm)
    hstu_fwd_fa_kernel(const P p, const FaCfg cfg) {
  constexpr int kBq = 64 * kM, kBk = 64 / kM, kTile = kBk * kFaLd;
  extern __shared__ __align__(128) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);
  T* sK = sQ + kBq * kFaLd;  // two stages
  T* sV = sK + 2 * kTile;    // two stages
  __shared__ int s_lo, s_hi;

  // Query tiles of one (sequence, head) are adjacent (they share K/V in L2), last tile first.
  const int64_t tile = cfg.n_qtiles - 1 - static_cast<int64_t>(blockIdx.x) % cfg.n_qtiles;
  const int64_t bh = static_cast<int64_t>(blockIdx.x) / cfg.n_qtiles;
  const int64_t b = bh % p.B, hq = bh / p.B;
  const Seq s = load_seq(p, b);
  const int64_t i0 = tile * kBq;
  if (i0 >= s.Lq) return;
  const int nq = static_cast<int>(min64(kBq, s.Lq - i0));
  const int64_t kh = hq / (p.Hq / p.Hk);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float alpha = static_cast<float>(p.alpha);
  const int Lk = static_cast<int>(s.Lk);
  const int wrow0 = warp * 16 * kM;  // first row of this warp's strip

  // Q -> shared (group 0), 64 rows per call.
  const T* qrow0 =
      static_cast<const T*>(p.q) + b * p.q_batch + (s.q0 + i0) * p.q_row + hq * p.q_head;
#pragma unroll
  for (int part = 0; part < kBq / 64; ++part)
    fa_load_tile<T, 64>(
        sQ + part * 64 * kFaLd, nq - part * 64, cfg.dch, cfg.dch_pad, p.q,
        [&](int r) { return qrow0 + static_cast<int64_t>(part * 64 + r) * p.q_row; });
  cp_async_commit();

  // This thread's rows: h = 2 mi + u is row g + 8 u of m-fragment mi of the warp's strip (the
  // accumulator element e of fragment mi sits on row h = 2 mi + (e >> 1)); their key intervals.
  constexpr int kR = 2 * kM;
  int64_t irow[kR];
#pragma unroll
  for (int h = 0; h < kR; ++h) irow[h] = i0 + wrow0 + 16 * (h >> 1) + g + 8 * (h & 1);
  RowIv iv[kR];
#pragma unroll
  for (int h = 0; h < kR; ++h) iv[h] = RowIv{0, 0, 0, 0};
  if (threadIdx.x == 0) {
    s_lo = INT_MAX;
    s_hi = 0;
  }
  __syncthreads();
  {
    int lo = INT_MAX, hi = 0;
#pragma unroll
    for (int h = 0; h < kR; ++h) {
      iv[h] = row_intervals(p, s, irow[h]);
      if (iv[h].lo0 < iv[h].hi0) {
        lo = min(lo, iv[h].lo0);
        hi = max(hi, iv[h].hi0);
      }
      if (iv[h].lo1 < iv[h].hi1) {
        lo = min(lo, iv[h].lo1);
        hi = max(hi, iv[h].hi1);
      }
    }
    if (lo < hi) {
      atomicMin(&s_lo, lo);
      atomicMax(&s_hi, hi);
    }
  }
  __syncthreads();
  const int klo = s_lo, khi = s_hi;

  // Whether this thread's rows meet / cover the key tile [c0, c0 + 64) (rows past the sequence
  // neither; a tile reaching past Lk is never covered).
  auto rows_vs_tile = [&](int c0, bool* meets, bool* covers) {
    const int c1 = min(c0 + kBk, Lk);
    bool m = false, cv = c0 + kBk <= Lk;
#pragma unroll
    for (int h = 0; h < kR; ++h) {
      m = m || iv_meets(iv[h], c0, c1);
      cv = cv && iv_covers(iv[h], c0, c0 + kBk);
    }
    *meets = m;
    *covers = cv;
  };
  auto next_tile = [&](int c0) {  // block-uniform: the first tile >= c0 some row meets
    for (; c0 < khi; c0 += kBk) {
      bool m, cv;
      rows_vs_tile(c0, &m, &cv);
      if (__syncthreads_or(m)) break;
    }
    return c0;
  };
  auto load_kv = [&](int c0, int stage) {
    const int nk = min(kBk, Lk - c0);
    fa_load_tile<T, kBk>(sK + stage * kTile, nk, cfg.dch, cfg.dch_pad, p.q,
                         [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, false); });
    fa_load_tile<T, kBk>(sV + stage * kTile, nk, cfg.dvch, cfg.dvch_pad, p.q,
                         [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, true); });
  };

  int cur = klo < khi ? next_tile(klo / kBk * kBk) : khi;
  if (cur < khi) load_kv(cur, 0);
  cp_async_commit();   // group 1 (possibly empty)
  cp_async_wait<1>();  // Q has landed
  __syncthreads();

  float o[kM][kFaD / 8][4];
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int j = 0; j < kFaD / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mi][j][e] = 0.f;

  const bool has_rab = p.rab != nullptr;
  const T* rab = static_cast<const T*>(p.rab);
  const int64_t rab_base = b * p.rab_s[0] + hq * p.rab_s[1];
  // ldmatrix lane offsets: Q (A of Q Kᵀ), K (non-transposed B of Q Kᵀ), V (transposed B of P V).
  const int q_row = (lane & 7) + ((lane >> 3) & 1) * 8, q_col = (lane >> 4) * 8;
  const int k_row = (lane & 7) + (lane >> 4) * 8, k_col = ((lane >> 3) & 1) * 8;
  const int v_row = (lane & 7) + ((lane >> 3) & 1) * 8, v_col = (lane >> 4) * 8;

  int stage = 0;
  while (cur < khi) {
    const int nxt = next_tile(cur + kBk);
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
      float sc[kM][kBk / 8][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int j = 0; j < kBk / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) sc[mi][j][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < kFaD / 16; ++kk) {
        if (kk < cfg.nks) {
          uint32_t qa[kM][4];
#pragma unroll
          for (int mi = 0; mi < kM; ++mi)
            ldsm_x4(smem_u32(sQ + (wrow0 + 16 * mi + q_row) * kFaLd + kk * 16 + q_col), qa[mi]);
#pragma unroll
          for (int np = 0; np < kBk / 16; ++np) {
            uint32_t bf[4];
            ldsm_x4(smem_u32(tK + (np * 16 + k_row) * kFaLd + kk * 16 + k_col), bf);
#pragma unroll
            for (int mi = 0; mi < kM; ++mi) {
              mma_16816<T>(sc[mi][2 * np], qa[mi], bf[0], bf[1]);
              mma_16816<T>(sc[mi][2 * np + 1], qa[mi], bf[2], bf[3]);
            }
          }
        }
      }
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) {
        // Mask bits of fragment mi (bit 4 j + e), then P in place.
        uint32_t keep = 0xffffffffu;
        if (!warp_full) {
          keep = 0;
#pragma unroll
          for (int q = 0; q < kBk / 2; ++q) {
            const int j = q >> 2, e = q & 3;
            const int c = cur + 8 * j + 2 * t + (e & 1);
            if (iv_has(iv[2 * mi + (e >> 1)], c)) keep |= 1u << q;
          }
        }
#pragma unroll
        for (int j = 0; j < kBk / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const bool ok = (keep >> (4 * j + e)) & 1u;
            float x = sc[mi][j][e];
            if (has_rab && ok)
              x += Elem<T>::to_f(
                  rab[rab_base + irow[2 * mi + (e >> 1)] * p.rab_s[2] +
                      static_cast<int64_t>(cur + 8 * j + 2 * t + (e & 1)) * p.rab_s[3]]);
            const float y = silu_fast(alpha * x);
            sc[mi][j][e] = ok ? y : 0.f;
          }
        }
      }
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk) {
        uint32_t pa[kM][4];
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          pa[mi][0] = pack2<T>(sc[mi][2 * kk][0], sc[mi][2 * kk][1]);
          pa[mi][1] = pack2<T>(sc[mi][2 * kk][2], sc[mi][2 * kk][3]);
          pa[mi][2] = pack2<T>(sc[mi][2 * kk + 1][0], sc[mi][2 * kk + 1][1]);
          pa[mi][3] = pack2<T>(sc[mi][2 * kk + 1][2], sc[mi][2 * kk + 1][3]);
        }
#pragma unroll
        for (int np = 0; np < kFaD / 16; ++np) {
          if (2 * np < cfg.ntv) {
            uint32_t bf[4];
            ldsm_x4_t(smem_u32(tV + (kk * 16 + v_row) * kFaLd + np * 16 + v_col), bf);
#pragma unroll
            for (int mi = 0; mi < kM; ++mi) {
              mma_16816<T>(o[mi][2 * np], pa[mi], bf[0], bf[1]);
              mma_16816<T>(o[mi][2 * np + 1], pa[mi], bf[2], bf[3]);
            }
          }
        }
      }
    }
    __syncthreads();  // the stage is free for the prefetch of the next iteration
    cur = nxt;
    stage ^= 1;
  }
  cp_async_wait<0>();

  // Scale rows, stage in the warp's own rows of sQ (only this warp read them), store 16 bytes.
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
    float rs[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int64_t i = irow[2 * mi + u];
      rs[u] = i < s.Lq ? row_scale(p, s, b, i) : 0.f;
    }
#pragma unroll
    for (int j = 0; j < kFaD / 8; ++j) {
      if (j < cfg.ntv) {
#pragma unroll
        for (int u = 0; u < 2; ++u)
          *reinterpret_cast<uint32_t*>(sQ + (wrow0 + 16 * mi + g + 8 * u) * kFaLd + 8 * j + 2 * t) =
              pack2<T>(o[mi][j][2 * u] * rs[u], o[mi][j][2 * u + 1] * rs[u]);
      }
    }
  }
  __syncwarp();
  T* orow0 = static_cast<T*>(p.out) + b * p.o_batch + (s.q0 + i0) * p.o_row + hq * p.o_head;
  for (int idx = lane; idx < 16 * kM * cfg.dvch; idx += 32) {
    const int r = idx / cfg.dvch, x = idx - r * cfg.dvch;
    const int row = wrow0 + r;
    if (row < nq)
      *reinterpret_cast<uint4*>(orow0 + static_cast<int64_t>(row) * p.o_row + 8 * x) =
          *reinterpret_cast<const uint4*>(sQ + row * kFaLd + 8 * x);
  }
}

// Why the register-resident forward cannot run this problem (empty: it can).
inline std::string fa_fwd_refusal(const P& p) {
  if (p.dtype != DType::bf16 && p.dtype != DType::fp16)
    return "cuda_sm80_fa runs bf16 and fp16 (fp32 runs on cuda_sm80)";
  if (p.mask || p.func)
    return "cuda_sm80_fa takes interval masks only (no custom mask tensor, no func); cuda_sm80 "
           "runs those";
  if (p.d > kFaD || p.dv > kFaD || p.d % 8 != 0 || p.dv % 8 != 0)
    return detail::cat("cuda_sm80_fa needs d and dv multiples of 8 up to ", kFaD, " (got d=", p.d,
                       ", dv=", p.dv, "); cuda_sm80 runs the rest");
  if (p.Sq > (INT_MAX >> 1) || p.Sk > (INT_MAX >> 1))
    return "cuda_sm80_fa needs sequence lengths below 2^30";
  const size_t es = 2;
  bool al = fa_rows_aligned16(p.q, es, {p.q_batch, p.q_row, p.q_head}) &&
            fa_rows_aligned16(p.k, es, {p.k_batch, p.k_row, p.k_head}) &&
            fa_rows_aligned16(p.v, es, {p.v_batch, p.v_row, p.v_head}) &&
            fa_rows_aligned16(p.out, es, {p.o_batch, p.o_row, p.o_head});
  if (p.kv_cache)
    al = al && fa_rows_aligned16(p.kv_cache, es, {p.kv_s[0], p.kv_s[1], p.kv_s[2], p.kv_s[3]});
  if (!al) return "cuda_sm80_fa needs 16-byte aligned rows of q, k, v, out (and the KV cache)";
  return {};
}

// The forward. It trusts the dispatch: its only caller is hstu_attn_fwd_cuda_fa (launch.cu), which
// core::dispatch runs right after hstu_attn_fwd_fa_accepts accepted these params
// (fa_fwd_refusal, compute capability 8.0), so the accept test runs once per call. A new caller
// must run fa_fwd_refusal first: the register tiles (d, dv <= kFaD) and the 16-byte copies and
// stores rely on what it checks.
template <class T, int kM>
Status run_fwd_fa(const P& p, const Context& ctx) {
  constexpr int kBq = 64 * kM, kBk = 64 / kM;
  constexpr const char* kOp = "hstu_attn_fwd";
  FaCfg c{};
  c.n_qtiles = (p.Sq + kBq - 1) / kBq;
  c.nks = static_cast<int>((p.d + 15) / 16);
  c.ntv = static_cast<int>(p.dv / 8);
  c.dch = static_cast<int>(p.d / 8);
  c.dvch = static_cast<int>(p.dv / 8);
  c.dch_pad = 2 * c.nks;
  c.dvch_pad = 2 * static_cast<int>((p.dv + 15) / 16);
  const int64_t gx = c.n_qtiles * p.B * p.Hq;
  if (gx == 0) return Status::Ok();
  if (gx > INT_MAX)
    return Status(StatusCode::not_implemented,
                  detail::cat(kOp, ": cuda_sm80_fa grid too large (", gx, " blocks)"));
  const size_t bytes = static_cast<size_t>(kBq + 4 * kBk) * kFaLd * sizeof(T);
  return RECOPS_LAUNCH_KERNEL(kOp, (hstu_fwd_fa_kernel<T, kM>), dim3(static_cast<unsigned>(gx)),
                              dim3(kFaThreads), bytes, ctx.stream, p, c);
}

}  // namespace recops::ops::hstu_cuda
