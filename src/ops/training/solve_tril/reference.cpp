// training/solve_tril/reference.cpp: the golden (accuracy.md): per chunk and head, (I + A_c) X = I
// solved column by column by plain forward substitution in fp64, each element rounded once to the
// output dtype. Includes params.h and core only; shares no code with cpu/.
// Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include "ops/training/common/gdn_golden.h"
#include "ops/training/solve_tril/impls.h"

#include <vector>

namespace recops::ops::solve_tril_ns {
namespace {
using training::golden::offset_value;

template <class T, class U>
void golden(const Params& p) {
  const T* a = static_cast<const T*>(p.a);
  U* out = static_cast<U*>(p.out);
  const int64_t BT = p.BT;
  std::vector<double> x(static_cast<size_t>(BT * BT));
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    for (int64_t lo = first; lo < last; lo += BT) {
      const int64_t L = last - lo < BT ? last - lo : BT;  // the chunk's length
      for (int64_t h = 0; h < p.H; ++h) {
        // A_c[i][j] (i, j < L): row lo + i of batch b, head h, column j; strictly lower only.
        auto A = [&](int64_t i, int64_t j) {
          return to_double(a[((b * p.T + lo + i) * p.H + h) * BT + j]);
        };
        // Column c of X: X[c][c] = 1, X[i][c] = -sum_{c <= j < i} A[i][j] X[j][c] for i > c.
        for (int64_t c = 0; c < L; ++c) {
          for (int64_t i = 0; i < L; ++i) {
            if (i < c) {
              x[i * BT + c] = 0.0;
              continue;
            }
            if (i == c) {
              x[i * BT + c] = 1.0;
              continue;
            }
            double s = 0.0;
            for (int64_t j = c; j < i; ++j) s += A(i, j) * x[j * BT + c];
            x[i * BT + c] = -s;
          }
        }
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < BT; ++j)
            out[((b * p.T + lo + i) * p.H + h) * BT + j] =
                from_double<U>(j < L ? x[i * BT + j] : 0.0);
      }
    }
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  bool ok = false;
  visit_floating(p.in_dtype, [&](auto t) {
    ok = visit_floating(p.out_dtype, [&](auto u) { golden<decltype(t), decltype(u)>(p); });
  });
  if (!ok) return Status(StatusCode::internal, "solve_tril: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::solve_tril_ns
