// training/common/gemm_cpu.h: the matrix products of the training ops' CPU paths (chunk_loss's
// three GEMMs), in A (float, double for fp64 inputs) with operands of storage type T converted on
// the fly. Row-major, 64-bit index math.
//
// Two implementations, chosen when the library is built (RECOPS_WITH_BLAS, CMakeLists.txt; only
// files named *_blas.cpp see the BLAS):
// - with a CBLAS (OpenBLAS's OpenMP build, Debian's libopenblas-openmp-dev), the products are
//   single-threaded cblas_sgemm / cblas_dgemm calls on fixed slabs of the output, the slabs spread
//   over threads by core::parallel_for (gemm_detail::for_slabs); bf16/fp16 operands are converted
//   to A per slab first. Each element's sum is the same whatever the thread count.
// - otherwise the blocked loops below: each output element a sum in a fixed order (k ascending,
//   over kGemmLanes lanes combined in a fixed order for the dot products), parallel over blocks of
//   output rows (core::parallel_for). These skip exact-zero left-hand entries, so an inf/NaN
//   there meets a zero as 0; a BLAS propagates NaN (0 · inf), as cuBLAS does.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#if defined(RECOPS_HAVE_CBLAS)
#include <cblas.h>
#include <omp.h>
#endif

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
void gemm_nt_loops(int64_t M, int64_t N, int64_t K, const A* a, const T* b, A* c, int64_t ldc,
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
void gemm_nn_acc_loops(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const T* b, A* c,
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
void gemm_tn_acc_loops(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const A* b, A* c,
                       A* cs, int threads) {
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

namespace gemm_detail {
// Whether cblas's int can hold every size.
inline bool blas_fits(std::initializer_list<int64_t> sizes) {
  for (int64_t v : sizes)
    if (v > INT_MAX) return false;
  return true;
}

#if defined(RECOPS_HAVE_CBLAS)
// OpenBLAS's OpenMP build takes its thread count from omp_get_max_threads() at each call (one
// thread inside a parallel region). Every call here runs it on one thread: its threaded driver
// cuts K into blocks at other points than the single-threaded one, so letting it thread would make
// the last bits depend on the thread count.
class BlasOneThread {
 public:
  BlasOneThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~BlasOneThread() { omp_set_num_threads(saved_); }
  BlasOneThread(const BlasOneThread&) = delete;
  BlasOneThread& operator=(const BlasOneThread&) = delete;

 private:
  int saved_;
};

// c = a·b (ta/tb: the operand is stored transposed) + beta·c, row-major; sizes already checked.
template <class A>
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const A* a, int64_t lda,
               const A* b, int64_t ldb, A beta, A* c, int64_t ldc) {
  const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  const int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K);
  const int la = static_cast<int>(lda), lb = static_cast<int>(ldb), lc = static_cast<int>(ldc);
  if constexpr (std::is_same_v<A, float>)
    cblas_sgemm(CblasRowMajor, opa, opb, m, n, k, 1.0f, a, la, b, lb, beta, c, lc);
  else
    cblas_dgemm(CblasRowMajor, opa, opb, m, n, k, 1.0, a, la, b, lb, beta, c, lc);
}

// The BLAS path's parallelism is ours: the output is cut into slabs of rows or columns whose width
// depends on the output's extent alone, never on the thread count, and core::parallel_for hands
// whole slabs to threads, each a single-threaded BLAS call; a converted operand is cut along K at
// fixed multiples of kConvK. So an element's sum is the same call's on any thread count.
// The width: an eighth of the extent (so that up to 8 threads get work), rounded down to a multiple
// of kSlabMin, between kSlabMin and kSlabMax. Wide slabs amortise OpenBLAS's packing of the shared
// operand (each call packs it again): at M 256, K 4096, N 32768 fp32 on 2 cores (OpenBLAS 0.3.21,
// AVX-512), slabs of 256 columns ran at 154 GFLOP/s, of 1024 at 200 (bench/results/cpu/NOTES.md).
inline constexpr int64_t kSlabMin = 256;
inline constexpr int64_t kSlabMax = 1024;
inline constexpr int64_t kConvK = 2048;

inline int64_t slab_width(int64_t n) {
  return std::clamp<int64_t>(n / 8 / kSlabMin * kSlabMin, kSlabMin, kSlabMax);
}

// fn(j0, nj) for each slab [j0, j0 + nj) of n, slabs spread over the threads.
template <class F>
void for_slabs(int64_t n, int threads, F&& fn) {
  const int64_t w = slab_width(n);
  core::parallel_for((n + w - 1) / w, 1, threads, [&](int64_t s0, int64_t s1) {
    BlasOneThread one;
    for (int64_t s = s0; s < s1; ++s) fn(s * w, std::min(w, n - s * w));
  });
}
#endif
}  // namespace gemm_detail

// c[i, j] = Σ_k a[i, k] · b[j, k] for i < M, j < N (a: [M, K] in A; b: [N, K] in T; c: [M, ldc]).
template <class A, class T>
void gemm_nt(int64_t M, int64_t N, int64_t K, const A* a, const T* b, A* c, int64_t ldc,
             int threads) {
  if (M <= 0 || N <= 0) return;
#if defined(RECOPS_HAVE_CBLAS)
  if (K > 0 && gemm_detail::blas_fits({M, N, K, ldc})) {
    gemm_detail::for_slabs(N, threads, [&](int64_t j0, int64_t nj) {
      if constexpr (std::is_same_v<A, T>) {
        gemm_detail::blas_gemm<A>(false, true, M, nj, K, a, K, b + j0 * K, K, A(0), c + j0, ldc);
      } else {  // this slab's rows of b converted (nj · K elements)
        thread_local std::vector<A> tile;
        tile.resize(static_cast<size_t>(nj * K));
        for (int64_t k = 0; k < nj * K; ++k) tile[k] = ce_load<A>(b[j0 * K + k]);
        gemm_detail::blas_gemm<A>(false, true, M, nj, K, a, K, tile.data(), K, A(0), c + j0, ldc);
      }
    });
    return;
  }
#endif
  gemm_nt_loops(M, N, K, a, b, c, ldc, threads);
}

// c[i, n] += Σ_k a[i, k] · b[k, n] for i < M, n < N (a: [M, lda] in A; b: [K, N] in T; c: [M, N]
// in A).
template <class A, class T>
void gemm_nn_acc(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const T* b, A* c,
                 int threads) {
  if (M <= 0 || N <= 0 || K <= 0) return;
#if defined(RECOPS_HAVE_CBLAS)
  if (gemm_detail::blas_fits({M, N, K, lda})) {
    gemm_detail::for_slabs(N, threads, [&](int64_t n0, int64_t nn) {
      if constexpr (std::is_same_v<A, T>) {
        gemm_detail::blas_gemm<A>(false, false, M, nn, K, a, lda, b + n0, N, A(1), c + n0, N);
      } else {  // b's columns of the slab converted, kConvK rows of K at a time
        thread_local std::vector<A> tile;
        const int64_t kc = std::min(K, gemm_detail::kConvK);
        tile.resize(static_cast<size_t>(kc * nn));
        for (int64_t k0 = 0; k0 < K; k0 += kc) {
          const int64_t nk = std::min(kc, K - k0);
          for (int64_t k = 0; k < nk; ++k)
            for (int64_t j = 0; j < nn; ++j)
              tile[k * nn + j] = ce_load<A>(b[(k0 + k) * N + n0 + j]);
          gemm_detail::blas_gemm<A>(false, false, M, nn, nk, a + k0, lda, tile.data(), nn, A(1),
                                    c + n0, N);
        }
      }
    });
    return;
  }
#endif
  gemm_nn_acc_loops(M, N, K, a, lda, b, c, threads);
}

// c[j, n] += Σ_k a[k, j] · b[k, n] and, when cs, cs[j] += Σ_k a[k, j] (k ascending), for j < M,
// n < N (a: [K, lda] in A; b: [K, N] in A; c: [M, N] in A).
template <class A>
void gemm_tn_acc(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const A* b, A* c, A* cs,
                 int threads) {
  if (M <= 0 || K <= 0) return;
#if defined(RECOPS_HAVE_CBLAS)
  if (gemm_detail::blas_fits({M, N, K, lda})) {
    gemm_detail::for_slabs(M, threads, [&](int64_t m0, int64_t mm) {
      if (N > 0)
        gemm_detail::blas_gemm<A>(true, false, mm, N, K, a + m0, lda, b, N, A(1), c + m0 * N, N);
      if (cs)
        for (int64_t k = 0; k < K; ++k)
          for (int64_t j = m0; j < m0 + mm; ++j) cs[j] += a[k * lda + j];
    });
    return;
  }
#endif
  gemm_tn_acc_loops(M, N, K, a, lda, b, c, cs, threads);
}

}  // namespace recops::ops::training
