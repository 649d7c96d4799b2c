// training/mhc_post/reference.cpp: the golden (accuracy.md): the spec's formulas (training_ops.md
// §4.1, §2.2) in fp64, one output element at a time, rounded once to the output's dtype.
// Includes params.h and core only.
#include "ops/training/mhc_post/impls.h"

namespace recops::ops::mhc_post_ns {
namespace {
// T: the streams' dtype; W: the coefficients' (float or double).
template <class T, class W>
void golden(const Params& p) {
  const T* X = static_cast<const T*>(p.X);
  const T* y = static_cast<const T*>(p.y);
  const W* post = static_cast<const W*>(p.post);
  const W* comb = static_cast<const W*>(p.comb);
  const int64_t n = p.n, C = p.C;
  // The weight from input stream i to output stream j of token t.
  auto w_at = [&](int64_t t, int64_t i, int64_t j) {
    return t * n * n + (p.out_in ? j * n + i : i * n + j);
  };
  auto w = [&](int64_t t, int64_t i, int64_t j) { return to_double(comb[w_at(t, i, j)]); };
  auto x = [&](int64_t t, int64_t i, int64_t c) { return to_double(X[(t * n + i) * C + c]); };
  if (!p.backward) {
    T* out = static_cast<T*>(p.out);
    for (int64_t t = 0; t < p.tokens; ++t)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < C; ++c) {
          double s = to_double(post[t * n + j]) * to_double(y[t * C + c]);
          for (int64_t i = 0; i < n; ++i) s += w(t, i, j) * x(t, i, c);
          out[(t * n + j) * C + c] = from_double<T>(s);
        }
    return;
  }
  const T* dout = static_cast<const T*>(p.dout);
  T* dX = static_cast<T*>(p.dX);
  T* dy = static_cast<T*>(p.dy);
  W* dpost = static_cast<W*>(p.dpost);
  W* dcomb = static_cast<W*>(p.dcomb);
  auto g = [&](int64_t t, int64_t j, int64_t c) { return to_double(dout[(t * n + j) * C + c]); };
  for (int64_t t = 0; t < p.tokens; ++t) {
    // dy = Σ_j post_j·dout_j
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += to_double(post[t * n + j]) * g(t, j, c);
      dy[t * C + c] = from_double<T>(s);
    }
    // dpost_j = <dout_j, y>
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t c = 0; c < C; ++c) s += g(t, j, c) * to_double(y[t * C + c]);
      dpost[t * n + j] = from_double<W>(s);
    }
    // dX_i = Σ_j comb[i, j]·dout_j
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < C; ++c) {
        double s = 0;
        for (int64_t j = 0; j < n; ++j) s += w(t, i, j) * g(t, j, c);
        dX[(t * n + i) * C + c] = from_double<T>(s);
      }
    // dcomb[i, j] = <X_i, dout_j>, stored where comb[i, j] is
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t c = 0; c < C; ++c) s += x(t, i, c) * g(t, j, c);
        dcomb[w_at(t, i, j)] = from_double<W>(s);
      }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  const bool ok = visit_floating(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (p.coef_dtype == DType::fp64)
      golden<T, double>(p);
    else
      golden<T, float>(p);
  });
  if (!ok) return Status(StatusCode::internal, "mhc_post: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::mhc_post_ns
