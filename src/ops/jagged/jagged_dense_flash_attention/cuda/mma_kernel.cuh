// jagged/jagged_dense_flash_attention/cuda/mma_kernel.cuh: cuda_sm80_mma, on tensor cores (fp16 /
// bf16, D a multiple of 8, 16-byte aligned rows of q, v, out and grad; compiled for sm_80 and
// sm_90a), forward and backward, D up to 256.
//
// The problem is attention with the T target columns of k[b] as the queries and the jagged rows
// of q (keys) and v (values): a block of 4 warps owns 64 target columns of one sample b, 16 a
// warp. The block gathers its columns of k (any strides; 16-byte loads where T % 8 == 0 and k's t
// stride is 1) transposed into a [64][D] shared tile once; row tiles of q and v (kBk rows: 64, or
// 32 in the 256 bucket) stream through a two-stage cp.async pipeline
// (ops/jagged/common/cuda/flash_mma.cuh), with the tile's attn_bias (by cp.async where its rows
// are chunks of 16 bytes: T % 8 == 0, t stride 1; otherwise any strides, element loads stored into
// the same shared stage). Per tile and warp the scores start as
// attn_bias (rows past n_b -inf), S += k_colsᵀ q_tileᵀ on mma.sync m16n8k16, then the online
// softmax in base 2 (a running max of -inf counts as 0, so that -inf scores add nothing), P rounded
// to the dtype and repacked in registers as the A operand of O += P v_tile. At the end a column
// with no finite score (n_b = 0, or every score -inf) gets out 0 and lse -inf, as cuda_sm80 and the
// reference do; otherwise out = O / l and lse = m + log l. Work items (b, column tile) are walked
// grid-stride; index math is 64-bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/cuda/check.h"
#include "core/cuda/launch.h"
#include "core/cuda/numeric.cuh"
#include "ops/jagged/common/cuda/flash_mma.cuh"
#include "ops/jagged/jagged_dense_flash_attention/cuda/launch.h"
#include "ops/jagged/jagged_dense_flash_attention/cuda/seq.cuh"
#include "ops/jagged/jagged_dense_flash_attention/cuda/tiles.h"

namespace recops::ops::jagged_dense_flash_attention_ns {
namespace mma {

namespace fm = jagged_flash_mma;
using core::cuda::cp_async_commit;
using core::cuda::cp_async_wait;
using core::cuda::from_float;
using core::cuda::to_float;
using fm::kLn2;
using fm::kLog2e;
using fm::Lanes;

constexpr int kThreads = kMmaThreads;
constexpr int kCols = kMmaCols;  // target columns per block, 16 a warp

// What a bwd_rows_kernel instance computes: dq and dbias (kPartDq), dv (kPartDv), or both.
inline constexpr int kPartDq = 1, kPartDv = 2;

struct Cfg {
  int64_t ctiles;  // column tiles (row tiles: bwd_rows_kernel) per sample
  int64_t items;   // B * ctiles
  fm::Widths w;    // from D
  bool ds_async;   // bwd_dk_kernel: dS tiles by cp.async (chunks_of_8 of dbias)
  bool k_vec;      // gather_cols by 16-byte loads (chunks_of_8 of k)
  bool bias_tile;  // fwd_kernel: attn_bias tiles by cp.async (chunks_of_8 of attn_bias)
};

// 16-byte chunks of 8 target columns: T % 8 == 0 (so every column tile, starting at a multiple of
// 8, holds whole chunks), the t stride 1, the other strides and the base multiples of 8 elements.
inline bool chunks_of_8(const void* base, int64_t T, int64_t st, int64_t s1, int64_t s2) {
  return T % 8 == 0 && st == 1 && s1 % 8 == 0 && s2 % 8 == 0 &&
         reinterpret_cast<uintptr_t>(base) % 16 == 0;
}

// sQ[j][d] = k[b, d, t0 + j] for j < nt, d < D; 0 for j < kN past nt and for D <= d < dpad.
// vec (Cfg::k_vec): 8 columns of a row d by one 16-byte load, d fastest over the threads so that
// a warp's transposing stores fall in distinct banks; 8 chunks a thread in flight before their
// stores. Otherwise element by element, j fastest (k's usual layout has T contiguous), 8 loads a
// thread issued before their stores so that their latencies overlap (a load-store loop waited on
// each load).
template <class T, int kD, int kN>
__device__ __forceinline__ void gather_cols(T* dst, const Params& p, int64_t b, int64_t t0, int nt,
                                            int dpad, bool vec) {
  constexpr int kLd = kD + 8, kU = 8;
  const T* kp = static_cast<const T*>(p.k) + b * p.k_sb + t0 * p.k_st;
  if (vec) {
    const int total = kN / 8 * dpad;  // chunks
    for (int base = threadIdx.x; base < total; base += kThreads * kU) {
      uint4 v[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int i = base + u * kThreads, d = i % dpad, ch = i / dpad;
        v[u] = i < total && 8 * ch < nt && d < p.D
                   ? *reinterpret_cast<const uint4*>(kp + d * p.k_sd + 8 * ch)
                   : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int i = base + u * kThreads, d = i % dpad, ch = i / dpad;
        if (i >= total) continue;
        const T* e = reinterpret_cast<const T*>(&v[u]);
#pragma unroll
        for (int x = 0; x < 8; ++x) dst[(8 * ch + x) * kLd + d] = e[x];
      }
    }
    return;
  }
  const int total = kN * dpad;
  for (int base = threadIdx.x; base < total; base += kThreads * kU) {
    T v[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int i = base + u * kThreads, j = i % kN, d = i / kN;
      v[u] = i < total && j < nt && d < p.D ? kp[d * p.k_sd + j * p.k_st] : from_float<T>(0.f);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int i = base + u * kThreads;
      if (i < total) dst[(i % kN) * kLd + i / kN] = v[u];
    }
  }
}

// kBk: rows of q / v per pipeline stage (the 256 bucket halves it so that two blocks fit an SM).
// kSplit = 2 (T <= 32: one column tile of at most 32 columns, which two warps cover): warps w and
// w + 2 own the same 16 columns and take the first and the second half of every row tile (kR =
// kBk / 2 rows each), each with its own online softmax; at the end warp w + 2 hands m, l and O to
// warp w through shared memory and warp w merges them (O = O_0 2^(m_0 - m) + O_1 2^(m_1 - m)) and
// writes the columns. Otherwise (kSplit = 1) warp w owns columns 16 w .. 16 w + 15 over every
// row, so that with T <= 32 two of the four warps would idle.
// Shared memory: fwd_smem_bytes.
template <class T, int kD, int kBk, int kSplit>
__global__ void __launch_bounds__(kThreads, 2) fwd_kernel(const Params p, const Cfg c) {
  constexpr int kLd = kD + 8, kTile = kBk * kLd, kBLd = kCols + 8, kBTile = kBk * kBLd;
  constexpr int kR = kBk / kSplit;  // rows of a tile this warp takes
  static_assert(kSplit == 1 || kSplit == 2, "kSplit: 1 or 2");
  static_assert(kR % 16 == 0, "a warp's rows of a tile: whole 16-row k-steps of O += P v");
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);  // k's columns: [kCols][kLd]
  T* sK = sQ + kCols * kLd;                // q rows, two stages
  T* sV = sK + 2 * kTile;                  // v rows, two stages
  T* sB = sV + 2 * kTile;                  // attn_bias [kBk][kBLd], two stages
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // The warp's 16 columns (from wrow0) and its rows of each tile (from hr).
  const int wrow0 = (kSplit == 1 ? warp : warp & 1) * 16, half = kSplit == 1 ? 0 : warp >> 1;
  const int hr = half * kR;
  const Lanes ln(lane);
  const T* bias = static_cast<const T*>(p.bias);

  for (int64_t item = blockIdx.x; item < c.items; item += gridDim.x) {
    const int64_t b = item / c.ctiles, t0 = item % c.ctiles * kCols;
    const Seq s = seq_of(p, b);
    const int nt = static_cast<int>(min(int64_t{kCols}, p.T - t0));
    const int64_t nkt = (s.n + kBk - 1) / kBk;
    __syncthreads();  // the previous item's reads of shared memory are done
    auto load_qv = [&](int64_t kt, int stage) {
      const int nk = static_cast<int>(min(int64_t{kBk}, s.n - kt * kBk));
      const int64_t r0 = s.start + kt * kBk;
      fm::load_rows<T, kD, kBk, kThreads>(sK + stage * kTile,
                                          static_cast<const T*>(p.q) + r0 * p.q_row, p.q_row, nk,
                                          c.w.dch, c.w.dch_pad);
      fm::load_rows<T, kD, kBk, kThreads>(sV + stage * kTile,
                                          static_cast<const T*>(p.v) + r0 * p.v_row, p.v_row, nk,
                                          c.w.dch, c.w.dch_pad);
      // attn_bias rows of the tile into sB; rows past n_b and columns past nt 0 (their scores
      // are -inf or never stored). The padded stride (kCols + 8) spreads the reads of a score
      // fragment (rows 2 t apart, columns g) over distinct banks.
      T* bt = sB + stage * kBTile;
      const T* src = bias + b * p.bias_sb + kt * kBk * p.bias_sl + t0 * p.bias_st;
      if (c.bias_tile) {  // chunks of 8 columns by cp.async with the q / v rows
        for (int i = threadIdx.x; i < kBk * (kCols / 8); i += kThreads) {
          const int r = i / (kCols / 8), x = i % (kCols / 8);
          const bool ok = r < nk && 8 * x < nt;
          core::cuda::cp_async16(core::cuda::smem_u32(bt + r * kBLd + 8 * x),
                                 ok ? src + r * p.bias_sl + 8 * x : src, ok);
        }
      } else {  // any strides: element by element, 16 loads a thread in flight, then stored
        constexpr int kN = kBk * kCols, kU = 16;
        for (int base = threadIdx.x; base < kN; base += kThreads * kU) {
          T v[kU];
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            const int i = base + u * kThreads, r = i / kCols, j = i % kCols;
            v[u] = i < kN && r < nk && j < nt ? src[r * p.bias_sl + j * p.bias_st]
                                              : from_float<T>(0.f);
          }
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            const int i = base + u * kThreads;
            if (i < kN) bt[i / kCols * kBLd + i % kCols] = v[u];
          }
        }
      }
    };
    if (nkt > 0) load_qv(0, 0);
    cp_async_commit();
    // The warp's target columns: row half u is t0 + wrow0 + g + 8 u.
    const bool warp_rows = wrow0 < nt;  // warp-uniform: whether the warp has a column to compute
    int64_t tcol[2];
    bool tok[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      tok[u] = wrow0 + g + 8 * u < nt;
      tcol[u] = t0 + wrow0 + g + 8 * u;
    }

    // k[b, :, t0 + j] transposed into sQ[j][:] (zero past nt and past D up to the k-steps).
    gather_cols<T, kD, kCols>(sQ, p, b, t0, nt, 16 * c.w.nks, c.k_vec);

    float o[kD / 8][4];
    fm::zero(o);
    float mrow[2] = {-INFINITY, -INFINITY}, lrow[2] = {0.f, 0.f};  // m in log2 units
    int stage = 0;
    for (int64_t kt = 0; kt < nkt; ++kt) {
      if (kt + 1 < nkt) load_qv(kt + 1, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads();
      if (warp_rows) {
        // Scores start as the bias (-inf past n_b).
        float sc[kR / 8][4];
        const int64_t c0 = kt * kBk + hr;  // the warp's first row of the tile
        {
          const T* sb = sB + stage * kBTile + (hr + 2 * t) * kBLd + wrow0 + g;
#pragma unroll
          for (int j = 0; j < kR / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              sc[j][e] = c0 + 8 * j + 2 * t + (e & 1) < s.n
                             ? to_float(sb[(8 * j + (e & 1)) * kBLd + 8 * (e >> 1)])
                             : -INFINITY;
        }
        fm::mma_abt<T, kD, kR>(sc, sQ, wrow0, sK + stage * kTile + hr * kLd, ln, c.w.nks);
        // Rows past n_b are zeros, and 0 · ±inf (an infinite k element) added NaN to their -inf:
        // mask them again after the product.
#pragma unroll
        for (int j = 0; j < kR / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (c0 + 8 * j + 2 * t + (e & 1) >= s.n) sc[j][e] = -INFINITY;
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          float mx = -INFINITY;
#pragma unroll
          for (int j = 0; j < kR / 8; ++j) mx = fmaxf(mx, fmaxf(sc[j][2 * u], sc[j][2 * u + 1]));
          const float mnew = fmaxf(mrow[u], fm::quad_max(mx) * kLog2e);
          const float muse = mnew == -INFINITY ? 0.f : mnew;
          const float corr = exp2f(mrow[u] - muse);
          mrow[u] = mnew;
          float sum = 0.f;
#pragma unroll
          for (int j = 0; j < kR / 8; ++j)
#pragma unroll
            for (int e = 2 * u; e < 2 * u + 2; ++e) {
              sc[j][e] = exp2f(fmaf(sc[j][e], kLog2e, -muse));
              sum += sc[j][e];
            }
          lrow[u] = lrow[u] * corr + sum;
#pragma unroll
          for (int j = 0; j < kD / 8; ++j) {
            o[j][2 * u] *= corr;
            o[j][2 * u + 1] *= corr;
          }
        }
        fm::mma_xv<T, kD, kR>(o, sc, sV + stage * kTile + hr * kLd, ln, c.w.ntv);
      }
      __syncthreads();  // the stage is free for the next prefetch
      stage ^= 1;
    }
    cp_async_wait<0>();
    // With n_b = 0 the loop above had no barrier: every thread's gather stores into sQ must be
    // done before a warp stages its output rows there.
    __syncthreads();
    if constexpr (kSplit == 2) {
      // Warp w + 2's state into the q / v stages (free now), lane-major so that lane x of warp w
      // reads what lane x of warp w + 2 holds (the same fragment positions).
      constexpr int kPer = kD / 8 * 4 + 4;
      float* sX = reinterpret_cast<float*>(sK) + (warp & 1) * kPer * 32 + lane;
      if (half == 1 && warp_rows) {
#pragma unroll
        for (int j = 0; j < kD / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) sX[(4 * j + e) * 32] = o[j][e];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          sX[(kD / 2 + u) * 32] = mrow[u];
          sX[(kD / 2 + 2 + u) * 32] = lrow[u];
        }
      }
      __syncthreads();
      if (half == 1) continue;  // warp-uniform; no block-wide barrier follows in this item
      if (warp_rows) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const float m1 = sX[(kD / 2 + u) * 32], l1 = sX[(kD / 2 + 2 + u) * 32];
          const float m = fmaxf(mrow[u], m1), muse = m == -INFINITY ? 0.f : m;
          const float c0 = exp2f(mrow[u] - muse), c1 = exp2f(m1 - muse);
          mrow[u] = m;
          lrow[u] = lrow[u] * c0 + l1 * c1;
#pragma unroll
          for (int j = 0; j < kD / 8; ++j)
#pragma unroll
            for (int e = 2 * u; e < 2 * u + 2; ++e)
              o[j][e] = o[j][e] * c0 + sX[(4 * j + e) * 32] * c1;
        }
      }
    }
    if (!warp_rows) continue;  // warp-uniform; no block-wide barrier follows in this item

    float f[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const float l = fm::quad_sum(lrow[u]);
      const bool none = mrow[u] == -INFINITY && l == 0.f;  // no row, or every score -inf
      f[u] = none ? 0.f : 1.f / l;
      // Such a column's O is Σ 0·v: NaN where a value row is non-finite (0 · inf on the tensor
      // cores), which the factor 0 would keep. Its out is 0 (the empty column's), so clear it.
      if (none)
#pragma unroll
        for (int j = 0; j < kD / 8; ++j) o[j][2 * u] = o[j][2 * u + 1] = 0.f;
      if (p.lse && t == 0 && tok[u])
        static_cast<float*>(p.lse)[b * p.lse_sb + tcol[u] * p.lse_st] =
            none ? -INFINITY : mrow[u] * kLn2 + logf(l);
    }
    // The warp's own rows of sQ: only this warp read them.
    fm::stage_acc<T, kD>(sQ, wrow0, o, f, lane, c.w.ntv);
    __syncwarp();
    fm::store_rows<T, kD>(static_cast<T*>(p.out) + b * p.out_sb + t0 * p.out_st, p.out_st, sQ,
                          wrow0, 16, nt, lane, 32, c.w.dch);
  }
}

// ---- backward ----
//
// bwd_rows_kernel: a block of 4 warps owns 64 rows l of one sample (16 a warp), q and v rows
// staged once; per step of kBn target columns (64, or 32 in the 128 and 256 buckets so that the
// accumulators, Sᵀ and dPᵀ fit in registers) it reads the step's attn_bias into registers, stages
// k's columns transposed and grad's rows, and reads lse (p = 0 for a column past T or with lse
// -inf) and delta = out . grad (16-byte loads from global memory), then
// (p by expf of s - lse in natural units, as the baseline: a score near -1e4 then loses nothing to
// the rounding of lse log2 e)
//   Sᵀ = bias + q kᵀ,  P = exp(Sᵀ - lse),  dPᵀ = v gradᵀ,  dS = P (dPᵀ - delta)
// writes dbias (rows l < n_b), and accumulates dv += P grad, dq += dS kᵀ in registers. With
// D = 256 one instance computes dq and dbias (kPartDq) and a second one dv (kPartDv: S and P
// only, no v, dP or delta), each with one 16 x 256 fp32 accumulator a warp.
// bwd_dk_kernel: a block owns 64 target columns of one sample (16 a warp) and walks the rows in
// tiles of 64: dkᵀ += dSᵀ q, dS read back from dbias (the rows kernel wrote it rounded to the
// dtype, which is what a product of it uses anyway) one tile ahead into registers, q rows through
// a two-stage cp.async pipeline; dk [B, D, T] is staged transposed and written with t fastest. The
// launcher clears dq, dv and dbias first (truncated rows and dbias rows n_b <= l < S stay 0); every
// dk element is written (0 for an empty sequence).
template <class T, int kD, int kBn, int kPart>
__global__ void __launch_bounds__(kThreads, 2) bwd_rows_kernel(const Params p, const Cfg c) {
  constexpr bool kDq = kPart & kPartDq, kDv = kPart & kPartDv;
  constexpr int kLd = kD + 8, kTile = kCols * kLd;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);                  // q rows [64][kLd]
  T* sV = sQ + kTile;                                      // v rows [64][kLd]
  T* sK = sV + kTile;                                      // k's columns [kBn][kLd]
  T* sG = sK + kBn * kLd;                                  // grad rows [kBn][kLd]
  float* sLse = reinterpret_cast<float*>(sG + kBn * kLd);  // [kBn]
  float* sDl = sLse + kBn;                                 // [kBn], delta
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int wrow0 = warp * 16;
  const Lanes ln(lane);
  const T* bias = static_cast<const T*>(p.bias);
  const T* outp = static_cast<const T*>(p.out);
  const T* gradp = static_cast<const T*>(p.grad);
  T* dbias = static_cast<T*>(p.dbias);
  constexpr int kTpc = kThreads / kBn;  // threads per column for delta

  for (int64_t item = blockIdx.x; item < c.items; item += gridDim.x) {
    const int64_t b = item / c.ctiles, r0 = item % c.ctiles * kCols;
    const Seq s = seq_of(p, b);
    if (r0 >= s.n) continue;  // uniform over the block
    const int nr = static_cast<int>(min(int64_t{kCols}, s.n - r0));
    __syncthreads();  // the previous item's reads of shared memory are done
    fm::load_rows<T, kD, kCols, kThreads>(sQ, static_cast<const T*>(p.q) + (s.start + r0) * p.q_row,
                                          p.q_row, nr, c.w.dch, c.w.dch_pad);
    if constexpr (kDq)
      fm::load_rows<T, kD, kCols, kThreads>(sV,
                                            static_cast<const T*>(p.v) + (s.start + r0) * p.v_row,
                                            p.v_row, nr, c.w.dch, c.w.dch_pad);
    cp_async_commit();
    int64_t lrow[2];
    bool rok[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      rok[u] = wrow0 + g + 8 * u < nr;
      lrow[u] = r0 + wrow0 + g + 8 * u;
    }
    float dq[kDq ? kD / 8 : 1][4], dv[kDv ? kD / 8 : 1][4];
    if constexpr (kDq) fm::zero(dq);
    if constexpr (kDv) fm::zero(dv);
    const int dpad = 16 * c.w.nks;
    for (int64_t c0 = 0; c0 < p.T; c0 += kBn) {
      const int nt = static_cast<int>(min(int64_t{kBn}, p.T - c0));
      __syncthreads();  // the previous step's reads of sK, sG, sLse, sDl are done
      // This step's attn_bias into registers first (raw T; 0 past n_b and T): their latency
      // overlaps the copies, the gather and delta below.
      T bz[kBn / 8][4];
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int u = e >> 1;
          const int64_t tc = c0 + 8 * j + 2 * t + (e & 1);
          bz[j][e] = rok[u] && tc < p.T ? bias[b * p.bias_sb + lrow[u] * p.bias_sl + tc * p.bias_st]
                                        : from_float<T>(0.f);
        }
      fm::load_rows<T, kD, kBn, kThreads>(sG, gradp + b * p.grad_sb + c0 * p.grad_st, p.grad_st, nt,
                                          c.w.dch, c.w.dch_pad);
      cp_async_commit();
      gather_cols<T, kD, kBn>(sK, p, b, c0, nt, dpad, c.k_vec);
      {
        // lse (+inf for a column past T) and, for dq, delta = out . grad of
        // column j by kTpc threads with 16-byte loads, 4 chunks each in flight.
        const int j = threadIdx.x / kTpc, part = threadIdx.x % kTpc;
        float acc = 0.f;
        if constexpr (kDq) {
          if (j < nt) {
            const T* orow = outp + b * p.out_sb + (c0 + j) * p.out_st;
            const T* grow = gradp + b * p.grad_sb + (c0 + j) * p.grad_st;
            constexpr int kPer = (kD / 8 + kTpc - 1) / kTpc, kU = kPer < 4 ? kPer : 4;
#pragma unroll
            for (int i0 = 0; i0 < kPer; i0 += kU) {
              uint4 ov[kU], gv[kU];
#pragma unroll
              for (int i = 0; i < kU; ++i) {
                const int x = part + (i0 + i) * kTpc;
                const bool ok = x < c.w.dch;
                ov[i] = ok ? *reinterpret_cast<const uint4*>(orow + 8 * x) : uint4{0, 0, 0, 0};
                gv[i] = ok ? *reinterpret_cast<const uint4*>(grow + 8 * x) : uint4{0, 0, 0, 0};
              }
#pragma unroll
              for (int i = 0; i < kU; ++i) {
                const T* oe = reinterpret_cast<const T*>(&ov[i]);
                const T* ge = reinterpret_cast<const T*>(&gv[i]);
#pragma unroll
                for (int k = 0; k < 8; ++k) acc = fmaf(to_float(oe[k]), to_float(ge[k]), acc);
              }
            }
          }
#pragma unroll
          for (int sh = 1; sh < kTpc; sh <<= 1) acc += __shfl_xor_sync(0xffffffffu, acc, sh);
        }
        if (part == 0) {
          float L = INFINITY;
          if (j < nt) {
            L = static_cast<const float*>(p.lse)[b * p.lse_sb + (c0 + j) * p.lse_st];
          }
          sLse[j] = L;
          sDl[j] = acc;
        }
      }
      cp_async_wait<0>();
      __syncthreads();
      float sc[kBn / 8][4], dp[kBn / 8][4];
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          sc[j][e] = to_float(bz[j][e]);
          dp[j][e] = 0.f;
        }
      fm::mma_abt<T, kD, kBn>(sc, sQ, wrow0, sK, ln, c.w.nks);
      if constexpr (kDq) fm::mma_abt<T, kD, kBn>(dp, sV, wrow0, sG, ln, c.w.nks);
#pragma unroll
      for (int j = 0; j < kBn / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int u = e >> 1, col = 8 * j + 2 * t + (e & 1);
          // p = 0 for a column with lse -inf (no key: whatever the score, +inf included, as the
          // reference and cuda_sm80 have it) and for a column past T (its zero-filled k gives
          // 0 * inf = NaN against a non-finite q, which P grad and dS k would spread to the row).
          const float L = sLse[col];
          const float pr = L == -INFINITY || c0 + col >= p.T ? 0.f : expf(sc[j][e] - L);
          sc[j][e] = pr;
          if constexpr (kDq) {
            const float ds = pr * (dp[j][e] - sDl[col]);
            if (rok[u] && c0 + col < p.T)
              dbias[(b * p.S + lrow[u]) * p.T + c0 + col] = from_float<T>(ds);
            dp[j][e] = ds;
          }
        }
      if constexpr (kDv) fm::mma_xv<T, kD, kBn>(dv, sc, sG, ln, c.w.ntv);
      if constexpr (kDq) fm::mma_xv<T, kD, kBn>(dq, dp, sK, ln, c.w.ntv);
    }
    cp_async_wait<0>();
    // The warp's own rows of sQ and sV: only this warp read them.
    const float one[2] = {1.f, 1.f};
    if constexpr (kDq) fm::stage_acc<T, kD>(sQ, wrow0, dq, one, lane, c.w.ntv);
    if constexpr (kDv) fm::stage_acc<T, kD>(sV, wrow0, dv, one, lane, c.w.ntv);
    __syncwarp();
    const int64_t at = (s.start + r0) * p.D;
    if constexpr (kDq)
      fm::store_rows<T, kD>(static_cast<T*>(p.dq) + at, p.D, sQ, wrow0, 16, nr, lane, 32, c.w.dch);
    if constexpr (kDv)
      fm::store_rows<T, kD>(static_cast<T*>(p.dv) + at, p.D, sV, wrow0, 16, nr, lane, 32, c.w.dch);
  }
}

template <class T, int kD>
__global__ void __launch_bounds__(kThreads, 2) bwd_dk_kernel(const Params p, const Cfg c) {
  constexpr int kLd = kD + 8, kTile = kCols * kLd, kLdS = kCols + 8, kSTile = kCols * kLdS;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);  // q rows, two stages
  T* sS = sQ + 2 * kTile;                  // dS [64 rows][kLdS], two stages
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wcol0 = warp * 16;
  const Lanes ln(lane);
  const T* dbias = static_cast<const T*>(p.dbias);

  for (int64_t item = blockIdx.x; item < c.items; item += gridDim.x) {
    const int64_t b = item / c.ctiles, t0 = item % c.ctiles * kCols;
    const Seq s = seq_of(p, b);
    const int nt = static_cast<int>(min(int64_t{kCols}, p.T - t0));
    const int64_t nrt = (s.n + kCols - 1) / kCols;
    __syncthreads();
    // Row tile rt of q and (c.ds_async: T % 8 == 0, dbias 16-byte aligned) of dS by cp.async.
    auto load_tile = [&](int64_t rt, int stage) {
      const int nr = static_cast<int>(min(int64_t{kCols}, s.n - rt * kCols));
      fm::load_rows<T, kD, kCols, kThreads>(
          sQ + stage * kTile, static_cast<const T*>(p.q) + (s.start + rt * kCols) * p.q_row,
          p.q_row, nr, c.w.dch, c.w.dch_pad);
      if (c.ds_async)
        fm::load_rows<T, kCols, kCols, kThreads>(sS + stage * kSTile,
                                                 dbias + (b * p.S + rt * kCols) * p.T + t0, p.T, nr,
                                                 nt / 8, kCols / 8);
    };
    if (nrt > 0) load_tile(0, 0);
    cp_async_commit();
    float dk[kD / 8][4];
    fm::zero(dk);
    const bool warp_cols = wcol0 < nt;
    int stage = 0;
    for (int64_t rt = 0; rt < nrt; ++rt) {
      if (rt + 1 < nrt) load_tile(rt + 1, stage ^ 1);
      cp_async_commit();
      if (!c.ds_async) {  // dS element by element (T % 8 != 0 or dbias not 16-byte aligned)
        const int nr = static_cast<int>(min(int64_t{kCols}, s.n - rt * kCols));
        T* tS = sS + stage * kSTile;
        for (int i = threadIdx.x; i < kCols * kCols; i += kThreads) {
          const int r = i / kCols, j = i % kCols;
          tS[r * kLdS + j] = r < nr && j < nt ? dbias[(b * p.S + rt * kCols + r) * p.T + t0 + j]
                                              : from_float<T>(0.f);
        }
      }
      cp_async_wait<1>();
      __syncthreads();
      if (warp_cols) {
        const T* tQ = sQ + stage * kTile;
        const T* tS = sS + stage * kSTile;
#pragma unroll
        for (int kk = 0; kk < kCols / 16; ++kk) {
          uint32_t a[4];  // dSᵀ (16 columns x 16 rows) from the [row][column] tile
          core::cuda::ldsm_x4_t(
              core::cuda::smem_u32(tS + (kk * 16 + ln.b_row) * kLdS + wcol0 + ln.b_col), a);
#pragma unroll
          for (int np = 0; np < kD / 16; ++np) {
            if (2 * np < c.w.ntv) {
              uint32_t bq[4];
              core::cuda::ldsm_x4_t(
                  core::cuda::smem_u32(tQ + (kk * 16 + ln.t_row) * kLd + np * 16 + ln.t_col), bq);
              core::cuda::mma_16816<T>(dk[2 * np], a, bq[0], bq[1]);
              core::cuda::mma_16816<T>(dk[2 * np + 1], a, bq[2], bq[3]);
            }
          }
        }
      }
      __syncthreads();
      stage ^= 1;
    }
    cp_async_wait<0>();
    // dkᵀ [64 columns][D] into stage 0 of sQ (every read of it is done), then dk[b, d, t0 + j]
    // with j fastest.
    const float one[2] = {1.f, 1.f};
    fm::stage_acc<T, kD>(sQ, wcol0, dk, one, lane, c.w.ntv);
    __syncthreads();
    T* dkp = static_cast<T*>(p.dk) + b * p.D * p.T + t0;
    for (int i = threadIdx.x; i < kCols * p.D; i += kThreads) {
      const int j = i % kCols;
      const int64_t d = i / kCols;
      if (j < nt) dkp[d * p.T + j] = sQ[j * kLd + d];
    }
  }
}

// Bytes [0, n) at p set to 0 by the block: 16-byte stores between a byte head and tail.
__device__ __forceinline__ void zero_bytes(unsigned char* p, int64_t n) {
  if (n <= 0) return;
  int64_t head = static_cast<int64_t>((16 - (reinterpret_cast<uintptr_t>(p) & 15)) & 15);
  if (head > n) head = n;
  const int64_t vecs = (n - head) / 16;
  for (int64_t i = threadIdx.x; i < head; i += blockDim.x) p[i] = 0;
  uint4* v = reinterpret_cast<uint4*>(p + head);
  for (int64_t i = threadIdx.x; i < vecs; i += blockDim.x) v[i] = uint4{0, 0, 0, 0};
  for (int64_t i = head + 16 * vecs + threadIdx.x; i < n; i += blockDim.x) p[i] = 0;
}

// The backward's zeros that neither bwd_rows_kernel nor bwd_dk_kernel writes, instead of clearing
// dq, dv and dbias whole before them: block b < B clears dq / dv rows [start + w, start + rows) of
// sample b, w = n_b where the rows kernel runs (T > 0) and 0 otherwise (rows past max_L, or all of
// them), and dbias rows [n_b, S) of sample b; block B clears the rows outside every sample (before
// seq_offsets[0], from seq_offsets[B]). Offsets are clamped as seq_of reads them: bad offsets
// never move a store out of bounds (overlapping samples leave values unspecified, as they do in
// the rows kernel).
template <class T>
__global__ void __launch_bounds__(256) bwd_zero_kernel(const Params p) {
  const int64_t row_bytes = p.D * static_cast<int64_t>(sizeof(T));
  const int64_t t_bytes = p.T * static_cast<int64_t>(sizeof(T));
  auto rows = [&](int64_t r0, int64_t r1) {
    if (r1 <= r0) return;
    zero_bytes(static_cast<unsigned char*>(p.dq) + r0 * row_bytes, (r1 - r0) * row_bytes);
    zero_bytes(static_cast<unsigned char*>(p.dv) + r0 * row_bytes, (r1 - r0) * row_bytes);
  };
  for (int64_t b = blockIdx.x; b <= p.B; b += gridDim.x) {
    if (b == p.B) {
      rows(0, offset_at(p, 0));
      rows(offset_at(p, p.B), p.total_L);
      continue;
    }
    const Seq s = seq_of(p, b);
    rows(s.start + (p.T > 0 ? s.n : 0), s.start + s.rows);
    zero_bytes(static_cast<unsigned char*>(p.dbias) + (b * p.S + s.n) * t_bytes,
               (p.S - s.n) * t_bytes);
  }
}

inline Cfg cfg_of(const Params& p) {
  Cfg c{};
  c.ctiles = (p.T + kCols - 1) / kCols;
  c.items = p.B * c.ctiles;
  c.w = fm::widths_of(p.D);
  c.k_vec = chunks_of_8(p.k, p.T, p.k_st, p.k_sd, p.k_sb);
  c.bias_tile = chunks_of_8(p.bias, p.T, p.bias_st, p.bias_sl, p.bias_sb);
  return c;
}

// fwd_kernel's dynamic shared memory: k's columns, two stages of q and v rows and of attn_bias.
template <class T, int kD, int kBk>
constexpr size_t fwd_smem_bytes() {
  return (size_t{kCols + 4 * kBk} * (kD + 8) + size_t{2 * kBk} * (kCols + 8)) * sizeof(T);
}

}  // namespace mma

template <class T>
Status launch_fwd_mma(const Params& p, const Context& ctx) {
  const mma::Cfg c = mma::cfg_of(p);
  if (c.items == 0) return Status::Ok();
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(c.items, kMaxGrid)));
  // T <= 32: one column tile that two warps cover; the other two take half of every row tile.
  const bool split = p.T <= mma::kCols / 2;
  auto go = [&](auto d, auto bk) {
    constexpr int kD = decltype(d)::value, kBk = decltype(bk)::value;
    const size_t bytes = mma::fwd_smem_bytes<T, kD, kBk>();
    return split ? RECOPS_LAUNCH_KERNEL("jagged_dense_flash_attention",
                                        (mma::fwd_kernel<T, kD, kBk, 2>), grid, dim3(mma::kThreads),
                                        bytes, ctx.stream, p, c)
                 : RECOPS_LAUNCH_KERNEL("jagged_dense_flash_attention",
                                        (mma::fwd_kernel<T, kD, kBk, 1>), grid, dim3(mma::kThreads),
                                        bytes, ctx.stream, p, c);
  };
  if (p.D <= 64) return go(std::integral_constant<int, 64>{}, std::integral_constant<int, 64>{});
  if (p.D <= 128) return go(std::integral_constant<int, 128>{}, std::integral_constant<int, 64>{});
  return go(std::integral_constant<int, 256>{}, std::integral_constant<int, 32>{});
}

template <class T>
Status launch_bwd_mma(const Params& p, const Context& ctx) {
  constexpr const char* kOp = "jagged_dense_flash_attention_bwd";
  // Only what the two kernels below leave unwritten is cleared. A2 (total_L 400K of B max_L =
  // 1M rows): none of dq / dv (2 x 102 MB, all rows written) and 60% of dbias's 134 MB.
  const dim3 zgrid(static_cast<unsigned>(std::min<int64_t>(p.B + 1, kMaxGrid)));
  RECOPS_RETURN_IF_ERROR(
      RECOPS_LAUNCH_KERNEL(kOp, mma::bwd_zero_kernel<T>, zgrid, dim3(256), 0, ctx.stream, p));
  mma::Cfg rc =
      mma::cfg_of(p);  // rows: tiles of 64 rows that can be valid (l < min(max_L, total_L))
  rc.ctiles = (std::min(p.max_L, p.total_L) + mma::kCols - 1) / mma::kCols;
  rc.items = p.T > 0 ? p.B * rc.ctiles : 0;
  mma::Cfg kc = mma::cfg_of(p);  // dk: tiles of 64 target columns
  kc.ds_async = mma::chunks_of_8(p.dbias, p.T, 1, p.T, p.S * p.T);  // dbias is contiguous
  auto go = [&](auto d) -> Status {
    constexpr int kD = decltype(d)::value, kBn = kD > 64 ? 32 : 64;
    if (rc.items > 0) {
      const size_t bytes =
          size_t{2 * mma::kCols + 2 * kBn} * (kD + 8) * sizeof(T) + size_t{2 * kBn} * sizeof(float);
      const dim3 grid(static_cast<unsigned>(std::min<int64_t>(rc.items, kMaxGrid)));
      // D = 256: dq (with dbias) and dv in two passes, each with one 16 x 256 accumulator a warp
      // (both at once would need 256 fp32 registers a thread); the dv pass recomputes only S.
      if constexpr (kD > 128) {
        RECOPS_RETURN_IF_ERROR(
            RECOPS_LAUNCH_KERNEL(kOp, (mma::bwd_rows_kernel<T, kD, kBn, mma::kPartDq>), grid,
                                 dim3(mma::kThreads), bytes, ctx.stream, p, rc));
        RECOPS_RETURN_IF_ERROR(
            RECOPS_LAUNCH_KERNEL(kOp, (mma::bwd_rows_kernel<T, kD, kBn, mma::kPartDv>), grid,
                                 dim3(mma::kThreads), bytes, ctx.stream, p, rc));
      } else {
        RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(
            kOp, (mma::bwd_rows_kernel<T, kD, kBn, mma::kPartDq | mma::kPartDv>), grid,
            dim3(mma::kThreads), bytes, ctx.stream, p, rc));
      }
    }
    if (kc.items == 0) return Status::Ok();
    const size_t bytes = size_t{2 * mma::kCols} * (kD + 8) * sizeof(T) +
                         size_t{2 * mma::kCols} * (mma::kCols + 8) * sizeof(T);
    return RECOPS_LAUNCH_KERNEL(kOp, (mma::bwd_dk_kernel<T, kD>),
                                dim3(static_cast<unsigned>(std::min<int64_t>(kc.items, kMaxGrid))),
                                dim3(mma::kThreads), bytes, ctx.stream, p, kc);
  };
  if (p.D <= 64) return go(std::integral_constant<int, 64>{});
  if (p.D <= 128) return go(std::integral_constant<int, 128>{});
  return go(std::integral_constant<int, 256>{});
}

}  // namespace recops::ops::jagged_dense_flash_attention_ns
