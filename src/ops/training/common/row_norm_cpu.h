// training/common/row_norm_cpu.h: the CPU half of the row-reduction kit that the row-norm ops
// share. Rows (all leading dims flattened) run in parallel (core::parallel_for, static chunks);
// each row's reductions are plain loops over kLanes independent partial sums combined by a fixed
// tree (the compiler vectorises them; the order never depends on threads). Statistics are Acc:
// float for fp32/fp16/bf16, double for fp64 (training_ops.md §1).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "recops/isa_ns.h"
#include "core/parallel.h"
#include "ops/training/common/row_norm.h"
#include "recops/dtype.h"

namespace recops::ops::training {
// Built with the including file's ISA flags (rms_norm_gated's cpu_avx2 includes it too).
inline namespace RECOPS_ISA_NS {

template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
inline acc_t<T> ld(T v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return v;
  else
    return to_float(v);
}

// One rounding from Acc (float or double) to T.
template <class T, class A>
inline T st(A v) {
  if constexpr (std::is_same_v<A, double>)
    return from_double<T>(v);
  else
    return from_float<T>(v);
}

// Calls f(T{}, U{}) with the C++ types of two floating dtypes (recops/dtype.h's
// visit_floating); false when either is not floating.
template <class F>
inline bool visit_floating2(DType a, DType b, F&& f) {
  bool ok = false;
  visit_floating(a, [&](auto t) { ok = visit_floating(b, [&](auto u) { f(t, u); }); });
  return ok;
}

inline constexpr int kLanes = 16;

// Σ_{d < D} f(d) in Acc: lane j sums d ≡ j (mod kLanes), lanes combined by a fixed tree.
template <class Acc, class F>
inline Acc row_sum(int64_t D, F&& f) {
  Acc lane[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= D; d += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] += f(d + j);
  for (int j = 0; d + j < D; ++j) lane[j] += f(d + j);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) lane[j] += lane[j + w];
  return lane[0];
}

// Σ_{d < D} x_d² of one row in A (float or double).
template <class A, class T>
inline A row_sum_sq(const T* x, int64_t D) {
  return row_sum<A>(D, [&](int64_t d) {
    const A v = ld(x[d]);
    return v * v;
  });
}

// LayerNorm statistics of the n values at x in fp64: *mu = their mean, *r = 1/sqrt(mean (x − mu)²
// + eps), in two passes (no E[x²] − mu², which cancels when the mean dominates).
template <class T>
inline void mean_rstd(const T* x, int64_t n, double eps, double* mu, double* r) {
  const double nd = static_cast<double>(n);
  const double m = row_sum<double>(n, [&](int64_t d) { return double(ld(x[d])); }) / nd;
  const double var = row_sum<double>(n,
                                     [&](int64_t d) {
                                       const double c = double(ld(x[d])) - m;
                                       return c * c;
                                     }) /
                     nd;
  *mu = m;
  *r = 1.0 / std::sqrt(var + eps);
}

// Calls fn(r0, r1) over [0, rows) in parallel, chunks of at least ~32K elements.
template <class F>
inline void for_rows(int64_t rows, int64_t D, int threads, F&& fn) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, D));
  core::parallel_for(rows, grain, threads, fn);
}

// n column gradients (e.g. dweight and dbias) in the two fixed-order stages of column_grad:
// fn(row, part) adds row's contribution to part[j][0, D) for output j < n (zeroed here first);
// then outs[j][d] = Σ_i partials[j][i][d] in order of i, rounded once to W. ws: [n, P, D] Acc with
// P = norm_partials(rows, D); 1 <= n <= 4.
template <class W, class Acc, class F>
inline void column_grads(int64_t rows, int64_t D, int n, Acc* ws, W* const* outs, int threads,
                         F&& fn) {
  const int64_t P = norm_partials(rows, D);
  core::parallel_for(P, 1, threads, [&](int64_t i0, int64_t i1) {
    Acc* part[4];
    for (int64_t i = i0; i < i1; ++i) {
      for (int j = 0; j < n; ++j) {
        part[j] = ws + (j * P + i) * D;
        for (int64_t d = 0; d < D; ++d) part[j][d] = Acc(0);
      }
      const int64_t r1 = partial_begin(rows, P, i + 1);
      for (int64_t r = partial_begin(rows, P, i); r < r1; ++r) fn(r, part);
    }
  });
  constexpr int64_t kCols = 1024;
  const int64_t blocks = (D + kCols - 1) / kCols;
  core::parallel_for(n * blocks, 1, threads, [&](int64_t c0, int64_t c1) {
    Acc sum[kCols];
    for (int64_t c = c0; c < c1; ++c) {
      const Acc* src = ws + c / blocks * P * D;
      W* out = outs[c / blocks];
      const int64_t d0 = c % blocks * kCols, w = std::min(kCols, D - d0);
      for (int64_t j = 0; j < w; ++j) sum[j] = Acc(0);
      for (int64_t i = 0; i < P; ++i)
        for (int64_t j = 0; j < w; ++j) sum[j] += src[i * D + d0 + j];
      for (int64_t j = 0; j < w; ++j) out[d0 + j] = st<W>(sum[j]);
    }
  });
}

// Weight gradients in two fixed-order stages. fn(row, part) adds row's contribution to the
// chunk's partial part[0, D) (zeroed here first); then out[d] = Σ_i partials[i][d] in order of i,
// rounded once to W. ws: [P, D] Acc with P = norm_partials(rows, D).
template <class W, class Acc, class F>
inline void column_grad(int64_t rows, int64_t D, Acc* ws, W* out, int threads, F&& fn) {
  W* outs[1] = {out};
  column_grads(rows, D, 1, ws, outs, threads,
               [&](int64_t row, Acc* const* part) { fn(row, part[0]); });
}

// The backward of a row norm with an optional weight and bias: fn(row, buf, dw, db) for every
// row, buf a scratch of buf_len doubles per thread, dw / db the row's column partials of dweight /
// dbias (nullptr when that gradient is not wanted; with neither, rows just run in parallel).
// dweight / dbias are summed in a fixed order (column_grads) from ws [2, P, D] doubles.
template <class T, class F>
inline void rows_with_weight_grads(int64_t rows, int64_t D, int64_t buf_len, void* dweight,
                                   void* dbias, double* ws, int threads, F&& fn) {
  const int n = (dweight ? 1 : 0) + (dbias ? 1 : 0);
  if (n == 0) {
    for_rows(rows, D, threads, [&](int64_t r0, int64_t r1) {
      std::vector<double> buf(static_cast<size_t>(buf_len));
      for (int64_t row = r0; row < r1; ++row) fn(row, buf, nullptr, nullptr);
    });
    return;
  }
  T* outs[2] = {dweight ? static_cast<T*>(dweight) : static_cast<T*>(dbias),
                static_cast<T*>(dbias)};
  column_grads(rows, D, n, ws, outs, threads, [&](int64_t row, double* const* part) {
    thread_local std::vector<double> buf;
    buf.resize(static_cast<size_t>(buf_len));
    fn(row, buf, dweight ? part[0] : nullptr, dbias ? part[n - 1] : nullptr);
  });
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::ops::training
