// jagged/jagged_softmax/reference.cpp: the golden (accuracy.md): the formulas in fp64, one
// (sequence, column) at a time, each output rounded once to the dtype. Includes params.h, core and
// the goldens-only common/golden_offsets.h; shares no code with cpu/ or cuda/.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/jagged_softmax/impls.h"

namespace recops::ops::jagged_softmax_ns {
namespace {
int64_t offset(const Params& p, int64_t i) {
  const int64_t v = golden_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i);
  return v < 0 ? 0 : (v > p.total_L ? p.total_L : v);
}

template <class T>
void compute(const Params& p) {
  const T* a = static_cast<const T*>(p.a);
  const T* yb = static_cast<const T*>(p.b);
  T* out = static_cast<T*>(p.out);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t start = offset(p, b);
    const int64_t end = std::max(start, offset(p, b + 1));
    const int64_t n = std::min(end - start, p.max_L);
    for (int64_t h = 0; h < p.H; ++h) {
      auto A = [&](int64_t l) { return to_double(a[(start + l) * p.a_row_stride + h]); };
      auto Y = [&](int64_t l) { return to_double(yb[(start + l) * p.b_row_stride + h]); };
      auto put = [&](int64_t l, double v) { out[(start + l) * p.H + h] = from_double<T>(v); };
      if (!p.backward) {
        // m: the column maximum over l < n; a NaN anywhere makes it NaN.
        double m = -inf;
        for (int64_t l = 0; l < n; ++l) {
          const double x = A(l);
          if (std::isnan(x) || std::isnan(m))
            m = nan;
          else if (x > m)
            m = x;
        }
        double sum = 0;
        for (int64_t l = 0; l < n; ++l) sum += std::exp(A(l) - m);
        for (int64_t l = 0; l < n; ++l) put(l, m == -inf ? 0.0 : std::exp(A(l) - m) / sum);
      } else {
        double dot = 0;
        for (int64_t l = 0; l < n; ++l) dot += A(l) * Y(l);
        for (int64_t l = 0; l < n; ++l) put(l, Y(l) * (A(l) - dot));
      }
      for (int64_t l = n; l < end - start; ++l) put(l, 0.0);  // truncated rows
    }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { compute<decltype(t)>(p); }))
    return Status(StatusCode::internal, "jagged_softmax: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::jagged_softmax_ns
