// ops/jagged/common/jagged_dense_ew_reference.cpp: the golden of the jagged-dense elementwise ops
// (accuracy.md): the formulas of jagged_ops.md §2.3 (add) and §2.4(a) (mul and its backward) in
// fp64, element by element, rounded once to the dtype (recops/dtype.h's to_double, from_double).
// Plain loops over (b, l, d); it shares only the params struct with the implementations it judges
// (the offsets lookup comes from the goldens-only common/golden_offsets.h).
//   add: rows outside every sequence (only with invalid offsets, which the entry refuses on the
//        CPU) are left alone.
//   mul, mul_bwd: every output element is written: zeros first, then the products over
//        (b, l < min(L_b, S), d).
#include <algorithm>
#include <string>

#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/common/jagged_dense_ew.h"

namespace recops::ops {
namespace {

int64_t offset_at(const JdEwParams& p, int64_t i) {
  return golden_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i);
}

template <class T>
void golden(const JdEwParams& p) {
  const bool add = p.mode == JdEwMode::add;
  const bool bwd = p.mode == JdEwMode::mul_bwd;
  const T* a = static_cast<const T*>(p.a);  // x, or grad in the backward
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  T* out = static_cast<T*>(p.out);  // out, or dx
  T* dy = static_cast<T*>(p.dy);
  if (!add)
    for (int64_t i = 0; i < p.total_L * p.D; ++i) out[i] = from_double<T>(0.0);
  if (bwd)
    for (int64_t i = 0; i < p.B * p.S * p.D; ++i) dy[i] = from_double<T>(0.0);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t start = offset_at(p, b);
    const int64_t length = offset_at(p, b + 1) - start;
    // add visits every row of the sequence; mul only those that meet a row of y.
    const int64_t rows = add ? length : std::min(length, p.S);
    for (int64_t l = 0; l < rows; ++l) {
      for (int64_t d = 0; d < p.D; ++d) {
        const double av = to_double(a[(start + l) * p.a_row_stride + d]);
        double v = av;  // add's rows l >= S keep x as it is
        if (l < p.S) {
          const double yv = to_double(y[b * p.y_batch_stride + l * p.y_row_stride + d]);
          v = add ? av + yv : av * yv;
        }
        out[(start + l) * p.D + d] = from_double<T>(v);
        if (bwd)
          dy[(b * p.S + l) * p.D + d] =
              from_double<T>(av * to_double(x[(start + l) * p.x_row_stride + d]));
      }
    }
  }
}

}  // namespace

Status jd_ew_reference(const JdEwParams& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { golden<decltype(t)>(p); }))
    return Status(StatusCode::internal,
                  std::string(p.mode == JdEwMode::add ? "jagged_dense_elementwise_add"
                                                      : "jagged_dense_elementwise_mul") +
                      ": reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops
