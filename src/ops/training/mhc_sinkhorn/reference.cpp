// training/mhc_sinkhorn/reference.cpp: the golden (accuracy.md): the spec's step-by-step
// Sinkhorn (training_ops.md §4.1) in fp64, one matrix at a time, every iterate kept, rounded once
// to the dtype. The backward walks the kept iterates in reverse. Includes params.h and core only.
#include <cmath>
#include <vector>

#include "ops/training/mhc_sinkhorn/impls.h"

namespace recops::ops::mhc_sinkhorn_ns {
namespace {
// Row-major n x n matrices in fp64.
using Mat = std::vector<double>;

// y = x / (sum along the axis + eps): over_rows = true sums down each column (axis -2).
Mat normalise(const Mat& x, int64_t n, bool over_rows, double eps) {
  Mat y(x.size());
  for (int64_t a = 0; a < n; ++a) {
    double s = 0;
    for (int64_t b = 0; b < n; ++b) s += over_rows ? x[b * n + a] : x[a * n + b];
    for (int64_t b = 0; b < n; ++b) {
      const int64_t k = over_rows ? b * n + a : a * n + b;
      y[k] = x[k] / (s + eps);
    }
  }
  return y;
}

template <class T>
void golden(const Params& p) {
  const T* logits = static_cast<const T*>(p.logits);
  const T* dP = static_cast<const T*>(p.dP);
  T* out = static_cast<T*>(p.out);
  const int64_t n = p.n, nn = n * n;
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int64_t base = t * nn;
    // The softmax over each row (the last axis), with its max subtracted.
    Mat sm(nn);
    for (int64_t i = 0; i < n; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) mx = std::fmax(mx, to_double(logits[base + i * n + j]));
      // fmax skips NaN; a NaN logit must still reach the output (it does through exp below).
      double z = 0;
      for (int64_t j = 0; j < n; ++j) {
        sm[i * n + j] = std::exp(to_double(logits[base + i * n + j]) - mx);
        z += sm[i * n + j];
      }
      for (int64_t j = 0; j < n; ++j) sm[i * n + j] /= z;
    }
    // iterate[0] = softmax + eps; iterate[k] = iterate[k-1] normalised, the axis alternating
    // (columns first); 2 * iters - 1 normalisations in all.
    std::vector<Mat> it;
    Mat first(nn);
    for (int64_t k = 0; k < nn; ++k) first[k] = sm[k] + p.eps;
    it.push_back(first);
    const int64_t steps = 2 * p.iters - 1;
    for (int64_t k = 1; k <= steps; ++k) it.push_back(normalise(it.back(), n, k % 2 == 1, p.eps));
    if (!p.backward) {
      for (int64_t k = 0; k < nn; ++k) out[base + k] = from_double<T>(it.back()[k]);
      continue;
    }
    Mat g(nn);
    for (int64_t k = 0; k < nn; ++k) g[k] = to_double(dP[base + k]);
    for (int64_t k = steps; k >= 1; --k) {
      // Step k: y = x / (s + eps) along its axis, so dx = (dy - sum_axis dy*y) / (s + eps).
      const Mat& x = it[k - 1];
      const Mat& y = it[k];
      const bool over_rows = k % 2 == 1;
      Mat gx(nn);
      for (int64_t a = 0; a < n; ++a) {
        double s = 0, dot = 0;
        for (int64_t b = 0; b < n; ++b) {
          const int64_t e = over_rows ? b * n + a : a * n + b;
          s += x[e];
          dot += g[e] * y[e];
        }
        for (int64_t b = 0; b < n; ++b) {
          const int64_t e = over_rows ? b * n + a : a * n + b;
          gx[e] = (g[e] - dot) / (s + p.eps);
        }
      }
      g = gx;
    }
    // The softmax: dlogits = sm * (g - sum_j g*sm), per row (the added eps has no gradient).
    for (int64_t i = 0; i < n; ++i) {
      double dot = 0;
      for (int64_t j = 0; j < n; ++j) dot += g[i * n + j] * sm[i * n + j];
      for (int64_t j = 0; j < n; ++j)
        out[base + i * n + j] = from_double<T>(sm[i * n + j] * (g[i * n + j] - dot));
    }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.dtype == DType::fp64) {
    golden<double>(p);
  } else if (p.dtype == DType::fp32) {
    golden<float>(p);
  } else {
    return Status(StatusCode::internal, "mhc_sinkhorn: reference reached with a bad dtype");
  }
  return Status::Ok();
}

}  // namespace recops::ops::mhc_sinkhorn_ns
