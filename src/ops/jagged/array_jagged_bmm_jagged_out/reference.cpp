// jagged/array_jagged_bmm_jagged_out/reference.cpp: the golden (accuracy.md) of the ay and ayt
// products (ops/jagged/common/jagged2_bmm.h) as plain loops over the formula, with N_b =
// seq_lengths[b] and n = min(N_b, max_L):
//   z(b,m)[d] = sum_{k<n} X_b[m,k] · Y(b,k)[d]  (ayt: X_b[k,m]) for m < n, 0 for n <= m < N_b.
// Golden: fp64 products and sums, rounded once. With p.plain, the double standard's plain
// baseline: products of the inputs summed in order of k in fp32 (fp64 for fp64), rounded once.
// Shares no code with the CPU or CUDA paths (offsets through the goldens-only golden_offsets.h, the
// dtype switch through jagged2_bmm_golden.h).
#include <algorithm>

#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/common/jagged2_bmm_golden.h"

namespace recops::ops::j2bmm {
namespace {
template <class T, class Acc>
void golden(const Params& p) {
  const T* x = static_cast<const T*>(p.a);
  const T* y = static_cast<const T*>(p.y);
  T* z = static_cast<T*>(p.z);
  const bool t = p.mode == Mode::ayt;
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t o = golden_offset(p.offsets, p.off_int64, p.off_stride, b);
    const int64_t s = golden_offset(p.sq_offsets, p.sq_int64, p.sq_stride, b);
    const int64_t N = golden_offset(p.lengths, p.len_int64, p.len_stride, b);
    const int64_t n = std::min(N, p.max_L);
    for (int64_t m = 0; m < N; ++m)
      for (int64_t d = 0; d < p.D; ++d) {
        Acc acc = 0;
        for (int64_t k = 0; m < n && k < n; ++k) {
          const int64_t xi = s + (t ? k * N + m : m * N + k);
          acc += static_cast<Acc>(to_double(x[xi * p.a_stride])) *
                 static_cast<Acc>(to_double(y[(o + k) * p.y_stride + d]));
        }
        z[(o + m) * p.D + d] = from_double<T>(static_cast<double>(acc));
      }
  }
}
}  // namespace

Status array_golden(const Params& p, const Context&) {
  return golden_dispatch(p, "array_jagged_bmm_jagged_out",
                         [&](auto t, auto acc) { golden<decltype(t), decltype(acc)>(p); });
}

}  // namespace recops::ops::j2bmm
