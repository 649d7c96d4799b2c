// jagged/jagged2_softmax/reference.cpp: the golden (accuracy.md): the formulas in fp64, one line
// (row or column of a block's window) at a time, each output rounded once to the dtype. N_b by
// counting up to the block's root. Includes params.h, core and the goldens-only
// common/golden_offsets.h; shares no code with cpu/ or cuda/.
#include <cmath>
#include <limits>

#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/jagged2_softmax/impls.h"

namespace recops::ops::jagged2_softmax_ns {
namespace {
template <class T>
void compute(const Params& p) {
  const T* a = static_cast<const T*>(p.a);
  const T* yv = static_cast<const T*>(p.b);
  T* out = static_cast<T*>(p.out);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t o = golden_offset(p.offsets, p.offsets_int64, p.offsets_stride, b);
    const int64_t size = golden_offset(p.offsets, p.offsets_int64, p.offsets_stride, b + 1) - o;
    int64_t N = 0;
    while ((N + 1) * (N + 1) <= size) ++N;
    const int64_t n = N < p.max_L ? N : p.max_L;
    for (int64_t i = 0; i < N * N; ++i) out[o + i] = from_double<T>(0.0);  // outside the window
    for (int64_t j = 0; j < n; ++j) {
      // element k of line j: row j, column k (rows) or row k, column j (columns)
      auto at = [&](int64_t k) { return o + (p.transpose ? k * N + j : j * N + k); };
      auto A = [&](int64_t k) { return to_double(a[at(k) * p.a_stride]); };
      auto Y = [&](int64_t k) { return to_double(yv[at(k) * p.b_stride]); };
      if (!p.backward) {
        double m = -inf;  // the line's maximum; a NaN anywhere makes it NaN
        for (int64_t k = 0; k < n; ++k) {
          const double x = A(k);
          if (std::isnan(x) || std::isnan(m))
            m = nan;
          else if (x > m)
            m = x;
        }
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += std::exp(A(k) - m);
        for (int64_t k = 0; k < n; ++k)
          out[at(k)] = from_double<T>(m == -inf ? 0.0 : std::exp(A(k) - m) / sum);
      } else {
        double dot = 0;
        for (int64_t k = 0; k < n; ++k) dot += A(k) * Y(k);
        for (int64_t k = 0; k < n; ++k) out[at(k)] = from_double<T>(Y(k) * (A(k) - dot));
      }
    }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { compute<decltype(t)>(p); }))
    return Status(StatusCode::internal, "jagged2_softmax: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::jagged2_softmax_ns
