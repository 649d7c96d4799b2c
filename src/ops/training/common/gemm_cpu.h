// training/common/gemm_cpu.h: the small blocked matrix products of the training ops' CPU paths
// (chunk_loss's three GEMMs), in A (float, double for fp64 inputs) with operands of storage type T
// converted on the fly. Each output element is a sum in a fixed order (k ascending, over kGemmLanes
// lanes combined in a fixed order for the dot products), so results never depend on the threads.
// Row-major, 64-bit index math. Parallel over blocks of output rows (core::parallel_for).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "ops/training/common/ce_row_cpu.h"

namespace recops::ops::training {

inline constexpr int kGemmLanes = 8;
inline constexpr int64_t kGemmRows = 4;  // register block of output rows

// Items per parallel chunk so that each chunk holds at least ~2^18 multiply-adds: small products
// run on the calling thread (a parallel region costs more than they do).
inline int64_t gemm_grain(int64_t work_per_item) {
  return std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(1, work_per_item));
}

// c[i, j] = Σ_k a[i, k] · b[j, k] for i < M, j < N (a: [M, K] in A; b: [N, K] in T; c: [M, ldc]).
// Parallel over blocks of kGemmRows rows of b, converted to A once per block.
template <class A, class T>
void gemm_nt(int64_t M, int64_t N, int64_t K, const A* a, const T* b, A* c, int64_t ldc,
             int threads) {
  const int64_t blocks = (N + kGemmRows - 1) / kGemmRows;
  core::parallel_for(blocks, gemm_grain(kGemmRows * M * K), threads, [&](int64_t b0, int64_t b1) {
    std::vector<A> bt(static_cast<size_t>(kGemmRows * K));
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j0 = blk * kGemmRows, nj = std::min(kGemmRows, N - j0);
      for (int64_t r = 0; r < nj; ++r)
        for (int64_t k = 0; k < K; ++k) bt[r * K + k] = ce_load<A>(b[(j0 + r) * K + k]);
      for (int64_t i = 0; i < M; ++i) {
        const A* ar = a + i * K;
        for (int64_t r = 0; r < nj; ++r) {
          const A* br = bt.data() + r * K;
          A lane[kGemmLanes] = {};
          int64_t k = 0;
          for (; k + kGemmLanes <= K; k += kGemmLanes)
            for (int l = 0; l < kGemmLanes; ++l) lane[l] += ar[k + l] * br[k + l];
          for (int l = 0; k < K; ++k, ++l) lane[l] += ar[k] * br[k];
          A s = 0;
          for (int l = 0; l < kGemmLanes; ++l) s += lane[l];
          c[i * ldc + j0 + r] = s;
        }
      }
    }
  });
}

// c[i, n] += Σ_k a[i, k] · b[k, n] for i < M, n < N (a: [M, lda] in A; b: [K, N] in T; c: [M, N]
// in A), k ascending. Parallel over blocks of kGemmRows rows of c; each row of b is converted
// once per block.
template <class A, class T>
void gemm_nn_acc(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const T* b, A* c,
                 int threads) {
  const int64_t blocks = (M + kGemmRows - 1) / kGemmRows;
  core::parallel_for(blocks, gemm_grain(kGemmRows * K * N), threads, [&](int64_t b0, int64_t b1) {
    std::vector<A> br(static_cast<size_t>(N));
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t i0 = blk * kGemmRows, ni = std::min(kGemmRows, M - i0);
      for (int64_t k = 0; k < K; ++k) {
        bool any = false;
        for (int64_t r = 0; r < ni; ++r) any = any || a[(i0 + r) * lda + k] != A(0);
        if (!any) continue;  // adding exact zeros changes nothing
        for (int64_t n = 0; n < N; ++n) br[n] = ce_load<A>(b[k * N + n]);
        for (int64_t r = 0; r < ni; ++r) {
          const A g = a[(i0 + r) * lda + k];
          A* cr = c + (i0 + r) * N;
          for (int64_t n = 0; n < N; ++n) cr[n] += g * br[n];
        }
      }
    }
  });
}

// c[j, n] += Σ_k a[k, j] · b[k, n] and, when cs, cs[j] += Σ_k a[k, j], for j < M, n < N (a: [K,
// lda] in A; b: [K, N] in A; c: [M, N] in A), k ascending. Parallel over blocks of rows of c.
template <class A>
void gemm_tn_acc(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const A* b, A* c, A* cs,
                 int threads) {
  const int64_t blocks = (M + kGemmRows - 1) / kGemmRows;
  core::parallel_for(blocks, gemm_grain(kGemmRows * K * N), threads, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j0 = blk * kGemmRows, nj = std::min(kGemmRows, M - j0);
      for (int64_t k = 0; k < K; ++k) {
        const A* bk = b + k * N;
        for (int64_t r = 0; r < nj; ++r) {
          const A g = a[k * lda + j0 + r];
          if (cs) cs[j0 + r] += g;
          if (g == A(0)) continue;
          A* cr = c + (j0 + r) * N;
          for (int64_t n = 0; n < N; ++n) cr[n] += g * bk[n];
        }
      }
    }
  });
}

}  // namespace recops::ops::training
