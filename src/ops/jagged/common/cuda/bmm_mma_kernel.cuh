// ops/jagged/common/cuda/bmm_mma_kernel.cuh: cuda_sm80_mma of the jagged matmuls, fp16 and bf16
// only: the same work list, tiles and split as bmm_tile_kernel (bmm_kernel.cuh), with the products
// on tensor cores (wmma 16 x 16 x 16, fp32 accumulators). Per CTA (8 warps) a 64 x 64 tile of C:
// warp w owns rows 16 (w / 2) .. +16 and columns 32 (w % 2) .. +32 (two fragments). Each k-step
// stages A (64 x 16, row-major) and B (16 x 64, row-major) in the input dtype in shared memory,
// zeros past the edges; after the inner loop the accumulators go through shared memory (fp32) to
// the bounds-checked store: z in the dtype, or the split's fp32 partials. The mma order is fixed:
// deterministic, no atomics.
#pragma once

#include <mma.h>

#include "ops/jagged/common/cuda/bmm_kernel.cuh"

namespace recops::ops::bmm {

inline constexpr int kMmaLdA = kBk + 8, kMmaLdB = kBn + 8, kMmaLdC = kBn + 4;  // padded rows

template <class T>
__global__ void __launch_bounds__(kThreads)
    bmm_mma_kernel(BmmParams p, int64_t tiles_per_seq, int64_t col_tiles) {
  namespace wmma = nvcuda::wmma;
  __shared__ __align__(32) T As[kBm * kMmaLdA];      // As[i * kMmaLdA + k] = A(i0 + i, k0 + k)
  __shared__ __align__(32) T Bs[kBk * kMmaLdB];      // Bs[k * kMmaLdB + j] = B(k0 + k, j0 + j)
  __shared__ __align__(32) float Cs[kBm * kMmaLdC];  // the tile's accumulators
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  T* z = static_cast<T*>(p.z);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int wr = (warp / 2) * 16, wc = (warp % 2) * 32;
  for (int64_t item = blockIdx.x; item < p.B * p.chunks * tiles_per_seq; item += gridDim.x) {
    BmmItem w;
    if (!bmm_item(p, item, tiles_per_seq, col_tiles, &w)) continue;  // the same for the whole CTA
    const BmmGemm& g = w.g;
    const int64_t b = w.b, c = w.c, i0 = w.i0, j0 = w.j0, k_lo = w.k_lo, k_hi = w.k_hi;
    const bool a_k_fast = g.a_sk == 1, b_j_fast = g.b_sj == 1;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    wmma::fill_fragment(acc[1], 0.0f);
    for (int64_t k0 = k_lo; k0 < k_hi; k0 += kBk) {
      for (int e = threadIdx.x; e < kBm * kBk; e += kThreads) {
        const int i = a_k_fast ? e / kBk : e % kBm, k = a_k_fast ? e % kBk : e / kBm;
        const int64_t gi = i0 + i, gk = k0 + k;
        As[i * kMmaLdA + k] =
            gi < g.rows && gk < k_hi ? x[g.a + gi * g.a_si + gk * g.a_sk] : T(0.0f);
      }
      for (int e = threadIdx.x; e < kBk * kBn; e += kThreads) {
        const int j = b_j_fast ? e % kBn : e / kBk, k = b_j_fast ? e / kBn : e % kBk;
        const int64_t gj = j0 + j, gk = k0 + k;
        Bs[k * kMmaLdB + j] = gj < p.N && gk < k_hi ? y[g.b + gk * g.b_sk + gj * g.b_sj] : T(0.0f);
      }
      __syncthreads();
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::load_matrix_sync(fa, As + wr * kMmaLdA, kMmaLdA);
      for (int f = 0; f < 2; ++f) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
        wmma::load_matrix_sync(fb, Bs + wc + 16 * f, kMmaLdB);
        wmma::mma_sync(acc[f], fa, fb, acc[f]);
      }
      __syncthreads();
    }
    for (int f = 0; f < 2; ++f)
      wmma::store_matrix_sync(Cs + wr * kMmaLdC + wc + 16 * f, acc[f], kMmaLdC,
                              wmma::mem_row_major);
    __syncthreads();
    for (int e = threadIdx.x; e < kBm * kBn; e += kThreads) {
      const int64_t i = i0 + e / kBn, j = j0 + e % kBn;
      if (i >= g.rows || j >= p.N) continue;
      const float v = Cs[(e / kBn) * kMmaLdC + e % kBn];
      if (p.chunks > 1)
        static_cast<float*>(p.workspace)[((b * p.chunks + c) * p.M + i) * p.N + j] = v;
      else
        z[g.c + i * g.c_si + j] = jagged_dev::from_acc<T>(v);
    }
    __syncthreads();  // Cs is read before the next item's accumulators are stored
  }
}

}  // namespace recops::ops::bmm
