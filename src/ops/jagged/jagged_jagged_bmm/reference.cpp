// jagged/jagged_jagged_bmm/reference.cpp: the golden (accuracy.md): z[b][m][n] =
// sum_{l < n_b} x(b,l)[m] · y(b,l)[n] as plain loops (n_b = 0: a zero block). Golden: products
// and sums in fp64, each output rounded once to the dtype. With p.plain, the double standard's
// plain baseline: products of the inputs (rounded to TF32 first when allow_tf32 and fp32) summed
// in order of l in fp32 (fp64 for fp64), then rounded once. Includes core and the goldens-only
// common/bmm_golden.h; shares no code with the CPU or CUDA paths.
#include <algorithm>

#include "ops/jagged/common/bmm.h"
#include "ops/jagged/common/bmm_golden.h"

namespace recops::ops::bmm {
namespace {
template <class T, class Acc>
void golden(const BmmParams& p) {
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  T* z = static_cast<T*>(p.z);
  const bool tf32 = p.plain && p.allow_tf32 && std::is_same_v<T, float>;
  auto value = [&](T v) -> Acc {
    if constexpr (std::is_same_v<Acc, float>) return tf32 ? golden_tf32(to_float(v)) : to_float(v);
    return to_double(v);
  };
  for (int64_t b = 0; b < p.B; ++b) {
    int64_t lo = 0, hi = 0;
    golden_rows(p, b, &lo, &hi);
    const int64_t n_b = std::min(hi - lo, p.max_L);
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t j = 0; j < p.N; ++j) {
        Acc acc = 0;
        for (int64_t l = 0; l < n_b; ++l)
          acc += value(x[(lo + l) * p.x_row_stride + m]) * value(y[(lo + l) * p.y_sk + j]);
        z[(b * p.M + m) * p.N + j] = from_double<T>(static_cast<double>(acc));
      }
  }
}
}  // namespace

Status jagged_jagged_bmm_reference(const BmmParams& p, const Context&) {
  const bool ok = visit_floating(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (p.plain && !std::is_same_v<T, double>)
      golden<T, float>(p);
    else
      golden<T, double>(p);
  });
  if (!ok)
    return Status(StatusCode::internal, "jagged_jagged_bmm: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::bmm
