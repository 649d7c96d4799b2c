// ops/jagged/common/cuda/flash_mma.cuh: the tensor-core pieces the cuda_sm80_mma kernels of the
// jagged flash attentions share (multi_head_jagged_flash_attention, jagged_dense_flash_attention):
// row tiles into shared memory with cp.async, the 16-row-per-warp products on mma.sync m16n8k16
// with fp32 accumulators, and the staging of an accumulator tile for 16-byte stores. Shared tiles
// are [rows][kD + 8] elements (T = __half or __nv_bfloat16): the padded stride puts the 8 row
// addresses of every ldmatrix into distinct banks. Device code only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/cuda/mma.cuh"

namespace recops::ops::jagged_flash_mma {

using core::cuda::cp_async16;
using core::cuda::ldsm_x4;
using core::cuda::ldsm_x4_t;
using core::cuda::mma_16816;
using core::cuda::pack2;
using core::cuda::smem_u32;

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

// The widths a launch derives from D (a multiple of 8); every field of the kernels' tiles over D.
struct Widths {
  int nks;      // 16-wide k-steps over D
  int ntv;      // 8-wide output column tiles (D / 8)
  int dch;      // 16-byte chunks per row (D / 8)
  int dch_pad;  // chunks written per shared row (2 nks; zero filled past dch)
};
inline Widths widths_of(int64_t D) {
  const int nks = static_cast<int>((D + 15) / 16);
  return {nks, static_cast<int>(D / 8), static_cast<int>(D / 8), 2 * nks};
}

// Rows r < kR of `src` (row r at src + r * row_stride, 16-byte aligned) into a [kR][kD + 8] shared
// tile with cp.async by the block's kThreads threads: chunks of 8 elements x < dch read; chunks
// dch <= x < dch_pad and rows r >= nvalid zero filled (their products then add 0). src is not
// dereferenced for those.
template <class T, int kD, int kR, int kThreads>
__device__ __forceinline__ void load_rows(T* dst, const T* src, int64_t row_stride, int nvalid,
                                          int dch, int dch_pad) {
  constexpr int kCh = kD / 8, kStep = kThreads / kCh;
  static_assert(kThreads % kCh == 0 && kR % kStep == 0);
  const int x = threadIdx.x % kCh;
  if (x >= dch_pad) return;
#pragma unroll
  for (int k = 0; k < kR / kStep; ++k) {
    const int r = threadIdx.x / kCh + k * kStep;
    const bool ok = r < nvalid && x < dch;
    const T* from = ok ? src + r * row_stride + 8 * x : src;
    cp_async16(smem_u32(dst + r * (kD + 8) + 8 * x), from, ok);
  }
}

// Rows first_row .. first_row + rows - 1 of a [.][kD + 8] shared tile, those < nvalid, to
// dst + r * row_stride (chunks x < dch, 16 bytes each; dst rows 16-byte aligned); the caller's
// threads idx0, idx0 + stride, ... share the chunks (a warp: lane, 32).
template <class T, int kD>
__device__ __forceinline__ void store_rows(T* dst, int64_t row_stride, const T* src, int first_row,
                                           int rows, int nvalid, int idx0, int stride, int dch) {
  for (int idx = idx0; idx < rows * dch; idx += stride) {
    const int r = first_row + idx / dch, x = idx % dch;
    if (r < nvalid)
      *reinterpret_cast<uint4*>(dst + static_cast<int64_t>(r) * row_stride + 8 * x) =
          *reinterpret_cast<const uint4*>(src + r * (kD + 8) + 8 * x);
  }
}

// ldmatrix lane offsets (row, column) within a 16 x 16 block: an A operand from a row-major
// [m][k] tile (a_*); a non-transposed B pair (two n-tiles of 8) from an [n][k] tile (b_*); a
// transposed B pair from a [k][n] tile (t_*).
struct Lanes {
  int a_row, a_col, b_row, b_col, t_row, t_col;
  __device__ __forceinline__ explicit Lanes(int lane)
      : a_row(lane & 15),
        a_col((lane >> 4) * 8),
        b_row((lane & 7) + (lane >> 4) * 8),
        b_col(((lane >> 3) & 1) * 8),
        t_row(lane & 15),
        t_col((lane >> 4) * 8) {}
};

// acc[mi][j] (16 x 8 n-tiles, j < kN / 8) += A_mi Bᵀ for kM row fragments: A_mi the 16 rows of sa
// from row ra + 16 mi, B the kN rows of sb from row 0 (both [row][k] over D), over the first nks
// 16-wide k-steps. Every B fragment serves the kM row fragments (kM = 2 halves the ldmatrix
// traffic per mma, at the cost of registers).
template <class T, int kD, int kN, int kM>
__device__ __forceinline__ void mma_abt(float (&acc)[kM][kN / 8][4], const T* sa, int ra,
                                        const T* sb, const Lanes& ln, int nks) {
  constexpr int kLd = kD + 8;
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    if (kk < nks) {
      uint32_t a[kM][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
        ldsm_x4(smem_u32(sa + (ra + 16 * mi + ln.a_row) * kLd + kk * 16 + ln.a_col), a[mi]);
#pragma unroll
      for (int np = 0; np < kN / 16; ++np) {
        uint32_t b[4];
        ldsm_x4(smem_u32(sb + (np * 16 + ln.b_row) * kLd + kk * 16 + ln.b_col), b);
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          mma_16816<T>(acc[mi][2 * np], a[mi], b[0], b[1]);
          mma_16816<T>(acc[mi][2 * np + 1], a[mi], b[2], b[3]);
        }
      }
    }
  }
}
// One row fragment.
template <class T, int kD, int kN>
__device__ __forceinline__ void mma_abt(float (&acc)[kN / 8][4], const T* sa, int ra, const T* sb,
                                        const Lanes& ln, int nks) {
  mma_abt<T, kD, kN, 1>(reinterpret_cast<float(&)[1][kN / 8][4]>(acc), sa, ra, sb, ln, nks);
}

// acc[mi][j] (16 x kD, n-tiles j < ntv computed) += X_mi V for kM row fragments: X_mi the 16 x kN
// accumulator tile x[mi] rounded to T and repacked in registers as the A operand, V the kN rows of
// sv ([k][n] over D, transposed loads, each serving the kM fragments).
template <class T, int kD, int kN, int kM>
__device__ __forceinline__ void mma_xv(float (&acc)[kM][kD / 8][4], const float (&x)[kM][kN / 8][4],
                                       const T* sv, const Lanes& ln, int ntv) {
  constexpr int kLd = kD + 8;
#pragma unroll
  for (int kk = 0; kk < kN / 16; ++kk) {
    uint32_t a[kM][4];
#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
      a[mi][0] = pack2<T>(x[mi][2 * kk][0], x[mi][2 * kk][1]);
      a[mi][1] = pack2<T>(x[mi][2 * kk][2], x[mi][2 * kk][3]);
      a[mi][2] = pack2<T>(x[mi][2 * kk + 1][0], x[mi][2 * kk + 1][1]);
      a[mi][3] = pack2<T>(x[mi][2 * kk + 1][2], x[mi][2 * kk + 1][3]);
    }
#pragma unroll
    for (int np = 0; np < kD / 16; ++np) {
      if (2 * np < ntv) {
        uint32_t b[4];
        ldsm_x4_t(smem_u32(sv + (kk * 16 + ln.t_row) * kLd + np * 16 + ln.t_col), b);
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          mma_16816<T>(acc[mi][2 * np], a[mi], b[0], b[1]);
          mma_16816<T>(acc[mi][2 * np + 1], a[mi], b[2], b[3]);
        }
      }
    }
  }
}
// One row fragment.
template <class T, int kD, int kN>
__device__ __forceinline__ void mma_xv(float (&acc)[kD / 8][4], const float (&x)[kN / 8][4],
                                       const T* sv, const Lanes& ln, int ntv) {
  mma_xv<T, kD, kN, 1>(reinterpret_cast<float(&)[1][kD / 8][4]>(acc),
                       reinterpret_cast<const float(&)[1][kN / 8][4]>(x), sv, ln, ntv);
}

template <int kN>
__device__ __forceinline__ void zero(float (&a)[kN][4]) {
#pragma unroll
  for (int j = 0; j < kN; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[j][e] = 0.f;
}

// Rounds this warp's 16 x kD accumulator tile, row half u scaled by f[u], to T into the warp's
// own 16 rows (from row0) of a [.][kD + 8] shared tile; n-tiles j < ntv. The warp's lanes read
// those rows (ldmatrix of other lanes' addresses) before: __syncwarp() orders those reads before
// these writes (compute-sanitizer racecheck reported the write-after-read as a warp-level hazard
// in the jagged-dense backward at f24e8f4).
template <class T, int kD>
__device__ __forceinline__ void stage_acc(T* dst, int row0, const float (&acc)[kD / 8][4],
                                          const float (&f)[2], int lane, int ntv) {
  const int g = lane >> 2, t = lane & 3;
  __syncwarp();
#pragma unroll
  for (int j = 0; j < kD / 8; ++j)
    if (j < ntv)
#pragma unroll
      for (int u = 0; u < 2; ++u)
        *reinterpret_cast<uint32_t*>(dst + (row0 + g + 8 * u) * (kD + 8) + 8 * j + 2 * t) =
            pack2<T>(acc[j][2 * u] * f[u], acc[j][2 * u + 1] * f[u]);
}

// Max and sum over the 4 lanes of a quad (the lanes holding one accumulator row).
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace recops::ops::jagged_flash_mma
