// jagged/multi_head_jagged_flash_attention/cuda/mma_kernel.cuh: cuda_sm80_mma, the tensor-core
// path (fp16 / bf16, D a multiple of 8 up to 128, 16-byte aligned rows; compiled for sm_80 and
// sm_90a): FlashAttention-2 style kernels on mma.sync m16n8k16 with fp32 accumulators, in D
// buckets of 64 and 128 (columns past D zero filled in shared memory, k-steps past D skipped).
//
// Forward (fwd_kernel): a block of 4 warps owns 64 kM query rows of one (head, sequence), kM
// 16-row fragments a warp that share every K and V fragment (kM, the tune parameter `fragments`:
// 1 or 2). Q is copied to shared memory once; key tiles (K and V; 64 rows, 32 with two fragments
// in the 128 bucket) stream through a two-stage cp.async pipeline. Per tile and warp: S = Q Kᵀ in
// registers, keys past n_b set to -inf, the online softmax in base 2 (row max over the quad by
// shuffles; a row max of -inf is taken as 0 so that an all -inf prefix gives zeros, not NaN), P
// rounded to the dtype and repacked in registers as the A operand of O += P V. At the end out = O /
// (l max_L) and lse = m + log l.
//
// Backward, deterministic and without a workspace or atomics, in two kernels that recompute P:
//   dq_kernel   (64 query rows a block): Δ = max_L out·g for its rows; per key tile
//               S = Q Kᵀ, dP = G Vᵀ, P = exp(S - lse) / max_L (keys past n_b: 0),
//               dS = P (dP - Δ), dQ += dS K;
//   dkdv_kernel (64 key rows a block): K and V staged once; per query tile (kBn rows: Q, G and
//               out staged, Δ computed from them, lse read; rows past n_b get lse = +inf, so
//               P = 0) Sᵀ = K Qᵀ, dPᵀ = V Gᵀ, dV += Pᵀ G, dK += dSᵀ Q.
// P and dS are rounded to the dtype before their products, as upstream and a framework
// composition do (the accuracy standard's baseline does the same). dq_kernel also zeroes the
// truncated rows n_b <= m < L_b of dq, dk and dv, and the forward those of out (lse -inf).
//
// Shared row stride kD + 8 elements: the 8 row addresses of every ldmatrix fall into distinct
// banks. Work items (head, sequence, tile) are flattened, tiles of one (head, sequence) adjacent
// so that they share K/V in L2, and walked grid-stride; index math is 64-bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/cuda/launch.h"
#include "core/cuda/mma.cuh"
#include "ops/jagged/common/cuda/flash_mma.cuh"
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/launch.h"
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/seq.cuh"
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/tiles.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {
namespace mma {

namespace fm = jagged_flash_mma;
using core::cuda::cp_async_commit;
using core::cuda::cp_async_wait;
using core::cuda::unpack2;
using fm::Lanes;
using fm::mma_abt;
using fm::mma_xv;
using fm::quad_max;
using fm::quad_sum;
using fm::stage_acc;
using fm::zero;

constexpr int kThreads = kMmaThreads;
constexpr int kRows = kMmaRows;  // query rows (fwd, dq) or key rows (dkdv) per block
using fm::kLn2;
using fm::kLog2e;

// Per-launch sizes: the work list and the widths derived from D (a multiple of 8).
struct Cfg {
  int64_t ntiles;  // row tiles per (head, sequence)
  int64_t items;   // H * B * ntiles
  fm::Widths w;    // from D
};

// Rows [r0, r0 + nvalid) of head h of t into a [kR][kD + 8] shared tile (fm::load_rows).
template <class T, int kD, int kR>
__device__ __forceinline__ void load_rows(T* dst, const HeadRows& t, int64_t h, int64_t r0,
                                          int nvalid, const Cfg& c) {
  fm::load_rows<T, kD, kR, kThreads>(dst, static_cast<const T*>(t.data) + h * t.hs + r0 * t.rs,
                                     t.rs, nvalid, c.w.dch, c.w.dch_pad);
}

// Stores `rows` rows of this warp (row0 = its first) of a shared tile, those < nvalid, to rows
// r0 + r of head h of a dense [H, total_L, D] output.
template <class T, int kD>
__device__ __forceinline__ void store_warp_rows(void* out, const Params& p, int64_t h, int64_t r0,
                                                const T* src, int row0, int rows, int nvalid,
                                                int lane, const Cfg& c) {
  fm::store_rows<T, kD>(static_cast<T*>(out) + (h * p.total_L + r0) * p.D, p.D, src, row0, rows,
                        nvalid, lane, 32, c.w.dch);
}

// Zeroes this item's share of rows [n, len) of up to three outputs (16-byte stores; D % 8 == 0
// and the outputs are dense and aligned) and sets their lse to -inf when `lse` is given.
template <class T>
__device__ void zero_tail(const Params& p, int64_t h, const Seq& s, int64_t tile, int64_t ntiles,
                          void* o0, void* o1, void* o2, float* lse) {
  if (s.n >= s.len) return;
  const int64_t dch = p.D / 8, chunks = (s.len - s.n) * dch;
  const int64_t step = ntiles * kThreads;
  const int64_t row0 = h * p.total_L + s.o + s.n;
  const uint4 z = make_uint4(0, 0, 0, 0);
  for (int64_t i = tile * kThreads + threadIdx.x; i < chunks; i += step) {
    const int64_t at = (row0 + i / dch) * p.D + 8 * (i % dch);
    *reinterpret_cast<uint4*>(static_cast<T*>(o0) + at) = z;
    if (o1) *reinterpret_cast<uint4*>(static_cast<T*>(o1) + at) = z;
    if (o2) *reinterpret_cast<uint4*>(static_cast<T*>(o2) + at) = z;
  }
  if (lse)
    for (int64_t m = tile * kThreads + threadIdx.x; m < s.len - s.n; m += step)
      lse[row0 + m] = -INFINITY;
}

// kM: 16-row fragments a warp (the block owns 64 kM query rows; key tiles of kBk rows).
template <class T, int kD, int kM, int kBk>
__global__ void __launch_bounds__(kThreads, 2) fwd_kernel(const Params p, const Cfg c) {
  constexpr int kBq = 64 * kM, kLd = kD + 8, kQTile = kBq * kLd, kKTile = kBk * kLd;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + kQTile;      // two stages
  T* sV = sK + 2 * kKTile;  // two stages
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wrow0 = warp * 16 * kM;
  const Lanes ln(lane);
  const float inv_maxl = 1.f / static_cast<float>(p.max_L);

  for (int64_t item = blockIdx.x; item < c.items; item += gridDim.x) {
    const int64_t tile = item % c.ntiles, hb = item / c.ntiles;
    const int64_t h = hb / p.B;
    const Seq s = seq_of(p, hb % p.B);
    zero_tail<T>(p, h, s, tile, c.ntiles, p.out, nullptr, nullptr, p.lse);
    const int64_t m0 = tile * kBq;
    if (m0 >= s.n) continue;  // uniform over the block
    const int nq = static_cast<int>(min(int64_t{kBq}, s.n - m0));
    const int64_t nkt = (s.n + kBk - 1) / kBk;
    __syncthreads();  // the previous item's reads of shared memory are done
    load_rows<T, kD, kBq>(sQ, p.q, h, s.o + m0, nq, c);
    cp_async_commit();
    auto load_kv = [&](int64_t kt, int stage) {
      const int nk = static_cast<int>(min(int64_t{kBk}, s.n - kt * kBk));
      load_rows<T, kD, kBk>(sK + stage * kKTile, p.k, h, s.o + kt * kBk, nk, c);
      load_rows<T, kD, kBk>(sV + stage * kKTile, p.v, h, s.o + kt * kBk, nk, c);
    };
    load_kv(0, 0);
    cp_async_commit();

    float o[kM][kD / 8][4];
    // Row h = 2 mi + u of this thread: row g + 8 u of fragment mi. m in log2 units.
    float mrow[2 * kM], lrow[2 * kM];
#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
      zero(o[mi]);
      mrow[2 * mi] = mrow[2 * mi + 1] = -INFINITY;
      lrow[2 * mi] = lrow[2 * mi + 1] = 0.f;
    }
    int stage = 0;
    for (int64_t kt = 0; kt < nkt; ++kt) {
      if (kt + 1 < nkt) load_kv(kt + 1, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads();
      float sc[kM][kBk / 8][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) zero(sc[mi]);
      mma_abt<T, kD, kBk, kM>(sc, sQ, wrow0, sK + stage * kKTile, ln, c.w.nks);
      const int64_t c0 = kt * kBk;
      if (c0 + kBk > s.n) {
#pragma unroll
        for (int mi = 0; mi < kM; ++mi)
#pragma unroll
          for (int j = 0; j < kBk / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (c0 + 8 * j + 2 * t + (e & 1) >= s.n) sc[mi][j][e] = -INFINITY;
      }
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int r = 2 * mi + u;
          float mx = -INFINITY;
#pragma unroll
          for (int j = 0; j < kBk / 8; ++j)
            mx = fmaxf(mx, fmaxf(sc[mi][j][2 * u], sc[mi][j][2 * u + 1]));
          const float mnew = fmaxf(mrow[r], quad_max(mx) * kLog2e);
          const float muse = mnew == -INFINITY ? 0.f : mnew;
          const float corr = exp2f(mrow[r] - muse);
          mrow[r] = mnew;
          float sum = 0.f;
#pragma unroll
          for (int j = 0; j < kBk / 8; ++j)
#pragma unroll
            for (int e = 2 * u; e < 2 * u + 2; ++e) {
              sc[mi][j][e] = exp2f(fmaf(sc[mi][j][e], kLog2e, -muse));
              sum += sc[mi][j][e];
            }
          lrow[r] = lrow[r] * corr + sum;
#pragma unroll
          for (int j = 0; j < kD / 8; ++j) {
            o[mi][j][2 * u] *= corr;
            o[mi][j][2 * u + 1] *= corr;
          }
        }
      mma_xv<T, kD, kBk, kM>(o, sc, sV + stage * kKTile, ln, c.w.ntv);
      __syncthreads();  // the stage is free for the next prefetch
      stage ^= 1;
    }
    cp_async_wait<0>();

#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
      float f[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int r = 2 * mi + u;
        const float l = quad_sum(lrow[r]);
        f[u] = inv_maxl / l;
        const int row = wrow0 + 16 * mi + g + 8 * u;
        if (p.lse && t == 0 && row < nq)
          p.lse[h * p.total_L + s.o + m0 + row] =
              (mrow[r] == -INFINITY ? -INFINITY : mrow[r] * kLn2) + logf(l);
      }
      // The warp's own rows of sQ: only this warp read them.
      stage_acc<T, kD>(sQ, wrow0 + 16 * mi, o[mi], f, lane, c.w.ntv);
    }
    __syncwarp();
    store_warp_rows<T, kD>(p.out, p, h, s.o + m0, sQ, wrow0, 16 * kM, nq, lane, c);
  }
}

// Δ·max_L of this thread's two rows (g, g + 8 of the warp's 16 at tile row wrow0), from out and
// grad in global memory (rows past nq: 0).
template <class T>
__device__ __forceinline__ void deltas(const Params& p, int64_t h, int64_t r0, int wrow0, int nq,
                                       int lane, float (&dl)[2]) {
  const float maxl = static_cast<float>(p.max_L);
  const int g = lane >> 2;
  dl[0] = dl[1] = 0.f;
  for (int r = 0; r < 16; ++r) {
    float part = 0.f;
    if (wrow0 + r < nq) {
      const int64_t row = r0 + wrow0 + r;
      const T* o = static_cast<const T*>(p.o.data) + h * p.o.hs + row * p.o.rs;
      const T* gr = static_cast<const T*>(p.grad.data) + h * p.grad.hs + row * p.grad.rs;
      for (int64_t d = 2 * lane; d < p.D; d += 64) {
        float o0, o1, g0, g1;
        unpack2<T>(*reinterpret_cast<const uint32_t*>(o + d), o0, o1);
        unpack2<T>(*reinterpret_cast<const uint32_t*>(gr + d), g0, g1);
        part = fmaf(o0, g0, fmaf(o1, g1, part));
      }
    }
#pragma unroll
    for (int sh = 16; sh > 0; sh >>= 1) part += __shfl_xor_sync(0xffffffffu, part, sh);
    if (r == g) dl[0] = part * maxl;
    if (r == g + 8) dl[1] = part * maxl;
  }
}

template <class T, int kD>
__global__ void __launch_bounds__(kThreads, 2) dq_kernel(const Params p, const Cfg c) {
  constexpr int kLd = kD + 8, kTile = kRows * kLd;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sG = sQ + kTile;
  T* sK = sG + kTile;      // two stages
  T* sV = sK + 2 * kTile;  // two stages
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wrow0 = warp * 16;
  const Lanes ln(lane);
  const float inv_maxl = 1.f / static_cast<float>(p.max_L);

  for (int64_t item = blockIdx.x; item < c.items; item += gridDim.x) {
    const int64_t tile = item % c.ntiles, hb = item / c.ntiles;
    const int64_t h = hb / p.B;
    const Seq s = seq_of(p, hb % p.B);
    zero_tail<T>(p, h, s, tile, c.ntiles, p.dq, p.dk, p.dv, nullptr);
    const int64_t m0 = tile * kRows;
    if (m0 >= s.n) continue;
    const int nq = static_cast<int>(min(int64_t{kRows}, s.n - m0));
    const int64_t nkt = (s.n + kRows - 1) / kRows;
    __syncthreads();
    load_rows<T, kD, kRows>(sQ, p.q, h, s.o + m0, nq, c);
    load_rows<T, kD, kRows>(sG, p.grad, h, s.o + m0, nq, c);
    cp_async_commit();
    auto load_kv = [&](int64_t kt, int stage) {
      const int nk = static_cast<int>(min(int64_t{kRows}, s.n - kt * kRows));
      load_rows<T, kD, kRows>(sK + stage * kTile, p.k, h, s.o + kt * kRows, nk, c);
      load_rows<T, kD, kRows>(sV + stage * kTile, p.v, h, s.o + kt * kRows, nk, c);
    };
    load_kv(0, 0);
    cp_async_commit();

    float dl[2], lse2[2];
    deltas<T>(p, h, s.o + m0, wrow0, nq, lane, dl);
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int r = wrow0 + g + 8 * u;
      lse2[u] = r < nq ? p.lse_in[h * p.lse_hs + s.o + m0 + r] * kLog2e : 0.f;
    }
    float dq[kD / 8][4];
    zero(dq);
    int stage = 0;
    for (int64_t kt = 0; kt < nkt; ++kt) {
      if (kt + 1 < nkt) load_kv(kt + 1, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads();
      const T* tK = sK + stage * kTile;
      float sc[kRows / 8][4], dp[kRows / 8][4];
      zero(sc);
      zero(dp);
      mma_abt<T, kD, kRows>(sc, sQ, wrow0, tK, ln, c.w.nks);
      mma_abt<T, kD, kRows>(dp, sG, wrow0, sV + stage * kTile, ln, c.w.nks);
      const int64_t c0 = kt * kRows;
      const bool edge = c0 + kRows > s.n;
#pragma unroll
      for (int j = 0; j < kRows / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int u = e >> 1;
          float pr = exp2f(fmaf(sc[j][e], kLog2e, -lse2[u])) * inv_maxl;
          if (edge && c0 + 8 * j + 2 * t + (e & 1) >= s.n) pr = 0.f;
          sc[j][e] = pr * (dp[j][e] - dl[u]);
        }
      mma_xv<T, kD, kRows>(dq, sc, tK, ln, c.w.ntv);
      __syncthreads();
      stage ^= 1;
    }
    cp_async_wait<0>();
    const float one[2] = {1.f, 1.f};
    stage_acc<T, kD>(sQ, wrow0, dq, one, lane, c.w.ntv);
    __syncwarp();
    store_warp_rows<T, kD>(p.dq, p, h, s.o + m0, sQ, wrow0, 16, nq, lane, c);
  }
}

// kBn: query rows per step (32 for the 128 bucket, so that dK, dV, Sᵀ and dPᵀ fit the registers).
template <class T, int kD, int kBn>
__global__ void __launch_bounds__(kThreads, 2) dkdv_kernel(const Params p, const Cfg c) {
  constexpr int kLd = kD + 8, kTile = kRows * kLd, kQt = kBn * kLd;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);
  T* sV = sK + kTile;
  T* sQ = sV + kTile;  // two stages each
  T* sG = sQ + 2 * kQt;
  T* sO = sG + 2 * kQt;
  float* sLse = reinterpret_cast<float*>(sO + 2 * kQt);  // [2][kBn], log2 units
  float* sDl = sLse + 2 * kBn;                           // [2][kBn], Δ·max_L
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, t = lane & 3;
  const int wrow0 = warp * 16;
  const Lanes ln(lane);
  const float maxl = static_cast<float>(p.max_L), inv_maxl = 1.f / maxl;
  constexpr int kTpr = kThreads / kBn;  // threads per query row for Δ

  for (int64_t item = blockIdx.x; item < c.items; item += gridDim.x) {
    const int64_t tile = item % c.ntiles, hb = item / c.ntiles;
    const int64_t h = hb / p.B;
    const Seq s = seq_of(p, hb % p.B);
    const int64_t k0 = tile * kRows;
    if (k0 >= s.n) continue;  // dq_kernel zeroed the truncated rows
    const int nk = static_cast<int>(min(int64_t{kRows}, s.n - k0));
    const int64_t nqt = (s.n + kBn - 1) / kBn;
    __syncthreads();
    load_rows<T, kD, kRows>(sK, p.k, h, s.o + k0, nk, c);
    load_rows<T, kD, kRows>(sV, p.v, h, s.o + k0, nk, c);
    cp_async_commit();
    auto load_q = [&](int64_t qt, int stage) {
      const int nq = static_cast<int>(min(int64_t{kBn}, s.n - qt * kBn));
      const int64_t r0 = s.o + qt * kBn;
      load_rows<T, kD, kBn>(sQ + stage * kQt, p.q, h, r0, nq, c);
      load_rows<T, kD, kBn>(sG + stage * kQt, p.grad, h, r0, nq, c);
      load_rows<T, kD, kBn>(sO + stage * kQt, p.o, h, r0, nq, c);
      if (threadIdx.x < kBn)
        sLse[stage * kBn + threadIdx.x] =
            threadIdx.x < nq ? p.lse_in[h * p.lse_hs + r0 + threadIdx.x] * kLog2e : INFINITY;
    };
    load_q(0, 0);
    cp_async_commit();

    float dk[kD / 8][4], dv[kD / 8][4];
    zero(dk);
    zero(dv);
    int stage = 0;
    for (int64_t qt = 0; qt < nqt; ++qt) {
      if (qt + 1 < nqt) load_q(qt + 1, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads();
      const T* tQ = sQ + stage * kQt;
      const T* tG = sG + stage * kQt;
      {  // Δ·max_L of the tile's rows (zero-filled rows give 0)
        const int r = threadIdx.x / kTpr, part = threadIdx.x % kTpr;
        const T* orow = sO + stage * kQt + r * kLd;
        const T* grow = tG + r * kLd;
        float acc = 0.f;
        for (int d = 2 * part; d < 16 * c.w.nks; d += 2 * kTpr) {
          float o0, o1, g0, g1;
          unpack2<T>(*reinterpret_cast<const uint32_t*>(orow + d), o0, o1);
          unpack2<T>(*reinterpret_cast<const uint32_t*>(grow + d), g0, g1);
          acc = fmaf(o0, g0, fmaf(o1, g1, acc));
        }
#pragma unroll
        for (int sh = 1; sh < kTpr; sh <<= 1) acc += __shfl_xor_sync(0xffffffffu, acc, sh);
        if (part == 0) sDl[stage * kBn + r] = acc * maxl;
      }
      __syncthreads();
      float sc[kBn / 8][4], dp[kBn / 8][4];
      zero(sc);
      zero(dp);
      mma_abt<T, kD, kBn>(sc, sK, wrow0, tQ, ln, c.w.nks);
      mma_abt<T, kD, kBn>(dp, sV, wrow0, tG, ln, c.w.nks);
      const float* lse2 = sLse + stage * kBn;
      const float* dl = sDl + stage * kBn;
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int q = 8 * j + 2 * t + (e & 1);
          const float pr = exp2f(fmaf(sc[j][e], kLog2e, -lse2[q])) * inv_maxl;
          sc[j][e] = pr;
          dp[j][e] = pr * (dp[j][e] - dl[q]);
        }
      mma_xv<T, kD, kBn>(dv, sc, tG, ln, c.w.ntv);
      mma_xv<T, kD, kBn>(dk, dp, tQ, ln, c.w.ntv);
      __syncthreads();
      stage ^= 1;
    }
    cp_async_wait<0>();
    // The warp's own rows of sK and sV: only this warp read them.
    const float one[2] = {1.f, 1.f};
    stage_acc<T, kD>(sK, wrow0, dk, one, lane, c.w.ntv);
    stage_acc<T, kD>(sV, wrow0, dv, one, lane, c.w.ntv);
    __syncwarp();
    store_warp_rows<T, kD>(p.dk, p, h, s.o + k0, sK, wrow0, 16, nk, lane, c);
    store_warp_rows<T, kD>(p.dv, p, h, s.o + k0, sV, wrow0, 16, nk, lane, c);
  }
}

// rows: the rows of a tile (kRows; the forward's 64 kM).
inline Cfg cfg_of(const Params& p, int64_t rows = kRows) {
  Cfg c{};
  // n_b <= min(max_L, total_L); at least one tile, so that max_L = 0 still zeroes the rows.
  c.ntiles = std::max<int64_t>(1, (std::min(p.max_L, p.total_L) + rows - 1) / rows);
  c.items = p.H * p.B * c.ntiles;
  c.w = fm::widths_of(p.D);
  return c;
}

inline unsigned grid_of(const Cfg& c) {
  return static_cast<unsigned>(std::min<int64_t>(c.items, kMaxGrid));
}

// The forward's key tile rows for kM row fragments of 16 a warp: 64, or 32 with two fragments in
// the 128 bucket so that O and S of both fit in registers.
template <int kD, int kM>
constexpr int fwd_key_rows() {
  return kM > 1 && kD > 64 ? 32 : 64;
}

template <int kD>
constexpr int dkdv_rows() {
  return kD > 64 ? 32 : 64;
}

template <class F>
Status by_bucket(int64_t D, F&& f) {
  if (D <= 64) return f(std::integral_constant<int, 64>{});
  return f(std::integral_constant<int, 128>{});
}

}  // namespace mma

// The forward with the tune parameter `fragments` (mma_fwd_candidates): 16-row fragments a warp,
// 1 (64 query rows a block) or 2 (128 rows; every K and V fragment serves both).
template <class T>
Status launch_fwd_mma(const Params& p, const Context& ctx) {
  int64_t frags = 1;
  RECOPS_RETURN_IF_ERROR(mma_fwd_fragments(p, ctx, &frags));
  auto go = [&](auto m) {
    constexpr int kM = decltype(m)::value;
    const mma::Cfg c = mma::cfg_of(p, 64 * kM);
    if (c.items == 0) return Status::Ok();
    return mma::by_bucket(p.D, [&](auto d) {
      constexpr int kD = decltype(d)::value, kBk = mma::fwd_key_rows<kD, kM>();
      const size_t bytes = size_t{64 * kM + 4 * kBk} * (kD + 8) * sizeof(T);
      return RECOPS_LAUNCH_KERNEL("multi_head_jagged_flash_attention",
                                  (mma::fwd_kernel<T, kD, kM, kBk>), dim3(mma::grid_of(c)),
                                  dim3(mma::kThreads), bytes, ctx.stream, p, c);
    });
  };
  if (frags == 2) return go(std::integral_constant<int, 2>{});
  return go(std::integral_constant<int, 1>{});
}

template <class T>
Status launch_bwd_mma(const Params& p, const Context& ctx) {
  const mma::Cfg c = mma::cfg_of(p);
  if (c.items == 0) return Status::Ok();
  return mma::by_bucket(p.D, [&](auto d) {
    constexpr int kD = decltype(d)::value, kBn = mma::dkdv_rows<kD>();
    constexpr const char* kOp = "multi_head_jagged_flash_attention_bwd";
    const size_t dq_bytes = size_t{6} * mma::kRows * (kD + 8) * sizeof(T);
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, (mma::dq_kernel<T, kD>), dim3(mma::grid_of(c)),
                                                dim3(mma::kThreads), dq_bytes, ctx.stream, p, c));
    const size_t dkdv_bytes = size_t{2} * mma::kRows * (kD + 8) * sizeof(T) +
                              size_t{6} * kBn * (kD + 8) * sizeof(T) +
                              size_t{4} * kBn * sizeof(float);
    return RECOPS_LAUNCH_KERNEL(kOp, (mma::dkdv_kernel<T, kD, kBn>), dim3(mma::grid_of(c)),
                                dim3(mma::kThreads), dkdv_bytes, ctx.stream, p, c);
  });
}

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
