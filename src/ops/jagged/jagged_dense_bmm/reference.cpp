// jagged/jagged_dense_bmm/reference.cpp: the golden (accuracy.md): z(b,l) = x(b,l) · y[b] for
// l < n_b, 0 for n_b <= l < L_b, as plain loops. Golden: products and sums in fp64, each output
// rounded once to the dtype. With p.plain, the double standard's plain baseline: products of the
// inputs (rounded to TF32 first when allow_tf32 and fp32) summed in order in fp32 (fp64 for
// fp64), then rounded once. Includes core and the goldens-only common/bmm_golden.h; shares no
// code with the CPU or CUDA paths.
#include <algorithm>

#include "ops/jagged/common/bmm.h"
#include "ops/jagged/common/bmm_golden.h"

namespace recops::ops::bmm {
namespace {
template <class T, class Acc>
void compute(const BmmParams& p) {
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  T* z = static_cast<T*>(p.z);
  const bool round_tf32 = p.plain && p.allow_tf32 && std::is_same_v<T, float>;
  auto in = [&](T v) -> Acc {
    if constexpr (std::is_same_v<Acc, float>)
      return round_tf32 ? golden_tf32(to_float(v)) : to_float(v);
    return to_double(v);
  };
  for (int64_t b = 0; b < p.B; ++b) {
    int64_t o = 0, e = 0;
    golden_rows(p, b, &o, &e);
    const int64_t n = std::min(e - o, p.max_L);
    for (int64_t l = 0; l < e - o; ++l)
      for (int64_t j = 0; j < p.N; ++j) {
        Acc sum = 0;
        for (int64_t k = 0; l < n && k < p.K; ++k)
          sum += in(x[(o + l) * p.x_row_stride + k]) * in(y[b * p.y_sb + k * p.y_sk + j * p.y_sn]);
        z[(o + l) * p.N + j] = from_double<T>(static_cast<double>(sum));
      }
  }
}
}  // namespace

Status jagged_dense_bmm_reference(const BmmParams& p, const Context&) {
  const bool ok = visit_floating(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (p.plain && !std::is_same_v<T, double>)
      compute<T, float>(p);
    else
      compute<T, double>(p);
  });
  if (!ok)
    return Status(StatusCode::internal, "jagged_dense_bmm: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::bmm
