// jagged/jagged2_dense_elementwise_mul/reference.cpp: the golden (accuracy.md): the formula of
// jagged_ops.md §2.4 (b) in fp64, element by element, rounded once to the dtype (recops/dtype.h's
// to_double, from_double). N_b = seq_lengths[b]. Shares only the params struct with the
// implementations it judges (offsets through the goldens-only common/golden_offsets.h).
#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/jagged2_dense_elementwise_mul/impls.h"

namespace recops::ops::jagged2_dense_elementwise_mul_ns {
namespace {
template <class T>
void golden(const Params& p) {
  const T* a = static_cast<const T*>(p.a);
  const T* y = static_cast<const T*>(p.y);
  T* out = static_cast<T*>(p.out);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t o = golden_offset(p.offsets, p.offsets_int64, p.offsets_stride, b);
    const int64_t N = golden_offset(p.lengths, p.lengths_int64, p.lengths_stride, b);
    for (int64_t m = 0; m < N; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        const int64_t i = o + m * N + n;
        double v = 0.0;
        if (m < p.max_L && n < p.max_L)
          v = to_double(a[i * p.a_stride]) * to_double(y[m * p.y_row_stride + n]);
        out[i] = from_double<T>(v);
      }
    }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { golden<decltype(t)>(p); }))
    return Status(StatusCode::internal,
                  "jagged2_dense_elementwise_mul: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::jagged2_dense_elementwise_mul_ns
