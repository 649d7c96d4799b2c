// ops/jagged/common/cuda/bmm_kernel.cuh: cuda_sm80 of the jagged matmuls (reads only the params).
// One CTA of kThreads = 256 threads computes a kBm x kBn tile of one sequence's C = A · B
// (bmm_gemm() in bmm_params.h: jagged_dense_bmm's rows l < n_b, or jagged_jagged_bmm's M x N
// block) from a flattened work list (sequence, row tile, column tile) walked grid-stride, so no
// grid dim is tied to B. The inner extent goes in steps of kBk: each step stages A^T (kBk x kBm)
// and B (kBk x kBn) in shared memory as the accumulator type (zeros past the edges: any K, N, M),
// then each thread adds the products for its 4 x 4 outputs (rows ty + 16r, columns tx + 16cc).
// Accumulation in fp32 (fp64 for fp64), exact fp32 products (no TF32 here), each output's sum in
// order of k by one thread: deterministic, no atomics. 64-bit index math.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/jagged/common/bmm_params.h"
#include "ops/jagged/common/cuda/acc.cuh"

namespace recops::ops::bmm {

inline constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each
inline constexpr int kBm = 64, kBn = 64, kBk = 16;

// The op's name in launch errors.
inline const char* bmm_op_name(const BmmParams& p) {
  return p.mode == BmmMode::jagged_dense ? "jagged_dense_bmm" : "jagged_jagged_bmm";
}

// The rows of C a sequence may have, which the row tiles cover: jagged_dense_bmm at most
// n_b <= min(max_L, total_L) (the CTAs of tiles past a shorter sequence's rows skip them),
// jagged_jagged_bmm M.
inline int64_t bmm_tile_rows(const BmmParams& p) {
  if (p.mode == BmmMode::jagged_dense) return p.max_L < p.total_L ? p.max_L : p.total_L;
  return p.M;
}

// Sequence b's rows [*o, *o + *rows), offsets clamped; *n = min(rows, max_L).
__device__ __forceinline__ void seq_rows(const BmmParams& p, int64_t b, int64_t* o, int64_t* rows,
                                         int64_t* n) {
  *o = bmm_offset(p, b);
  const int64_t e = bmm_offset(p, b + 1);
  *rows = e > *o ? e - *o : 0;
  *n = *rows < p.max_L ? *rows : p.max_L;
}

// One work item of the flattened list (below): sequence b, chunk c, the sequence's GEMM, the tile's
// origin (i0, j0) and its inner range [k_lo, k_hi) (all of it, or chunk c's part, possibly empty).
// false: the tile lies past the sequence's rows (jagged_dense_bmm's shorter sequences). Tm x Tn:
// the kernel's tile of C (kBm x kBn here, 128 x 128 or 128 x 256 in bmm_sm90_kernel.cuh).
struct BmmItem {
  BmmGemm g;
  int64_t b, c, i0, j0, k_lo, k_hi;
};
template <int Tm = kBm, int Tn = kBn>
__device__ __forceinline__ bool bmm_item(const BmmParams& p, int64_t item, int64_t tiles_per_seq,
                                         int64_t col_tiles, BmmItem* w) {
  const int64_t per_seq = p.chunks * tiles_per_seq, t = item % tiles_per_seq;
  w->b = item / per_seq;
  w->c = item % per_seq / tiles_per_seq;
  int64_t o, rows, n;
  seq_rows(p, w->b, &o, &rows, &n);
  w->g = bmm_gemm(p, w->b, o, n);
  w->i0 = (t / col_tiles) * Tm;
  w->j0 = (t % col_tiles) * Tn;
  const int64_t inner = w->g.inner;
  w->k_lo = p.chunks > 1 ? (w->c * p.chunk_rows < inner ? w->c * p.chunk_rows : inner) : 0;
  w->k_hi =
      p.chunks > 1 ? (w->k_lo + p.chunk_rows < inner ? w->k_lo + p.chunk_rows : inner) : inner;
  return w->i0 < w->g.rows;
}

// items = B * chunks * tiles_per_seq: (sequence b, chunk c, tile t), tile t = (t / col_tiles,
// t % col_tiles). Tiles past a sequence's rows (jagged_dense_bmm: n_b < row_tiles * kBm) are
// skipped by the whole CTA. With p.chunks > 1 (jagged_jagged_bmm's split) an item sums chunk c's
// rows only (possibly none: a zero partial) into the workspace [B, chunks, M, N] as Acc;
// bmm_split_reduce_kernel adds the chunks in order.
template <class T, class Acc>
__global__ void __launch_bounds__(kThreads)
    bmm_tile_kernel(BmmParams p, int64_t tiles_per_seq, int64_t col_tiles) {
  __shared__ Acc As[kBk][kBm + 1];  // As[k][i] = A(i0 + i, k0 + k)
  __shared__ Acc Bs[kBk][kBn + 1];  // Bs[k][j] = B(k0 + k, j0 + j)
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  T* z = static_cast<T*>(p.z);
  const int tx = static_cast<int>(threadIdx.x) % 16, ty = static_cast<int>(threadIdx.x) / 16;
  for (int64_t item = blockIdx.x; item < p.B * p.chunks * tiles_per_seq; item += gridDim.x) {
    BmmItem w;
    if (!bmm_item(p, item, tiles_per_seq, col_tiles, &w)) continue;  // the same for the whole CTA
    const BmmGemm& g = w.g;
    const int64_t b = w.b, c = w.c, i0 = w.i0, j0 = w.j0, k_lo = w.k_lo, k_hi = w.k_hi;
    // Staging order: consecutive threads along the operand's unit-stride dim (coalesced).
    const bool a_k_fast = g.a_sk == 1, b_j_fast = g.b_sj == 1;
    Acc acc[4][4] = {};
    for (int64_t k0 = k_lo; k0 < k_hi; k0 += kBk) {
      for (int e = threadIdx.x; e < kBm * kBk; e += kThreads) {
        const int i = a_k_fast ? e / kBk : e % kBm, k = a_k_fast ? e % kBk : e / kBm;
        const int64_t gi = i0 + i, gk = k0 + k;
        As[k][i] = gi < g.rows && gk < k_hi ? jagged_dev::to_acc(x[g.a + gi * g.a_si + gk * g.a_sk])
                                            : Acc(0);
      }
      for (int e = threadIdx.x; e < kBk * kBn; e += kThreads) {
        const int j = b_j_fast ? e % kBn : e / kBk, k = b_j_fast ? e / kBn : e % kBk;
        const int64_t gj = j0 + j, gk = k0 + k;
        Bs[k][j] =
            gj < p.N && gk < k_hi ? jagged_dev::to_acc(y[g.b + gk * g.b_sk + gj * g.b_sj]) : Acc(0);
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kBk; ++k) {
        Acc a[4], bv[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) a[r] = As[k][ty + 16 * r];
#pragma unroll
        for (int cc = 0; cc < 4; ++cc) bv[cc] = Bs[k][tx + 16 * cc];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int cc = 0; cc < 4; ++cc) acc[r][cc] += a[r] * bv[cc];
      }
      __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int64_t i = i0 + ty + 16 * r;
      if (i >= g.rows) continue;
#pragma unroll
      for (int cc = 0; cc < 4; ++cc) {
        const int64_t j = j0 + tx + 16 * cc;
        if (j >= p.N) continue;
        if (p.chunks > 1)
          static_cast<Acc*>(p.workspace)[((b * p.chunks + c) * p.M + i) * p.N + j] = acc[r][cc];
        else
          z[g.c + i * g.c_si + j] = jagged_dev::from_acc<T>(acc[r][cc]);
      }
    }
  }
}

// jagged_jagged_bmm's split: z[b] = sum over chunks c, in order, of the workspace's partials.
template <class T, class Acc>
__global__ void __launch_bounds__(kThreads) bmm_split_reduce_kernel(BmmParams p) {
  const Acc* ws = static_cast<const Acc*>(p.workspace);
  T* z = static_cast<T*>(p.z);
  const int64_t mn = p.M * p.N, stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < p.B * mn;
       e += stride) {
    const int64_t b = e / mn, r = e % mn;
    Acc sum = 0;
    for (int64_t c = 0; c < p.chunks; ++c) sum += ws[(b * p.chunks + c) * mn + r];
    z[e] = jagged_dev::from_acc<T>(sum);
  }
}

// jagged_dense_bmm's truncated rows [o + n_b, o + L_b) of z get 0: one CTA per sequence,
// grid-stride over the sequences.
template <class T>
__global__ void __launch_bounds__(kThreads) bmm_zero_truncated_kernel(BmmParams p) {
  T* z = static_cast<T*>(p.z);
  for (int64_t b = blockIdx.x; b < p.B; b += gridDim.x) {
    int64_t o, rows, n;
    seq_rows(p, b, &o, &rows, &n);
    const int64_t count = (rows - n) * p.N;
    T* dst = z + (o + n) * p.N;
    for (int64_t e = threadIdx.x; e < count; e += kThreads) dst[e] = T(0.0f);
  }
}

}  // namespace recops::ops::bmm
