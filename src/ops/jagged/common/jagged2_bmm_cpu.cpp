// ops/jagged/common/jagged2_bmm_cpu.cpp: cpu_generic of the jagged² matmuls (jagged2_bmm.h).
// Threads take contiguous ranges of samples (core::parallel_for, grain by the samples' work);
// each output row is one sample's row m:
//   ay/ayt: acc[0..D) += A[m,k] (or A[k,m]) * Y(k)[0..D) over k < n in order (the d loop is the
//           one the compiler vectorises), rows m >= n written 0;
//   xyt:    z[m,j] = sum_{d<D} A(m)[d] * Y(j)[d] in order of d (Y's window transposed once per
//           sample, the j loop vectorised), 0 outside m, j < n.
// fp32 accumulation for fp32/fp16/bf16, fp64 for fp64; every sum runs in a fixed order, so results
// are bit-identical across runs and thread counts.
#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "ops/jagged/common/jagged2_bmm.h"
#include "ops/jagged/common/cpu_io.h"
#include "ops/jagged/common/jagged2_cpu.h"

namespace recops::ops::j2bmm {
namespace {
template <class T, class Acc>
void sample(const Params& p, int64_t b, std::vector<Acc>& acc, std::vector<Acc>& yt) {
  const T* a = static_cast<const T*>(p.a);
  const T* y = static_cast<const T*>(p.y);
  T* z = static_cast<T*>(p.z);
  const Sample s = sample_at(p, b);
  const int64_t D = p.D, n = s.n;
  if (p.mode == Mode::xyt) {
    // Y's window transposed once into yt [D][n] (accumulator type), so that a row of z is
    // acc[0..n) += A(m)[d] * yt[d][0..n) over d in order: the j loop vectorises.
    yt.resize(static_cast<size_t>(D * n));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t d = 0; d < D; ++d) yt[d * n + j] = jagged2_widen(y[(s.o + j) * p.y_stride + d]);
    if (acc.size() < static_cast<size_t>(n)) acc.resize(static_cast<size_t>(n));
    for (int64_t m = 0; m < s.N; ++m) {
      T* out = z + s.sq + m * s.N;
      const int64_t w = m < n ? n : 0;  // rows past the window: all 0
      std::fill(acc.begin(), acc.begin() + w, Acc(0));
      const T* am = a + (s.o + m) * p.a_stride;
      for (int64_t d = 0; w > 0 && d < D; ++d) {
        const Acc av = jagged2_widen(am[d]);
        const Acc* yd = yt.data() + d * n;
        for (int64_t j = 0; j < n; ++j) acc[j] += av * yd[j];
      }
      for (int64_t j = 0; j < w; ++j) out[j] = jagged2_narrow<T>(acc[j]);
      std::fill(out + w, out + s.N, jagged2_narrow<T>(Acc(0)));
    }
    return;
  }
  const bool t = p.mode == Mode::ayt;
  for (int64_t m = 0; m < s.L; ++m) {
    T* out = z + (s.o + m) * D;
    std::fill(acc.begin(), acc.begin() + D, Acc(0));
    for (int64_t k = 0; m < n && k < n; ++k) {
      const Acc am = jagged2_widen(a[(s.sq + (t ? k * s.N + m : m * s.N + k)) * p.a_stride]);
      const T* yk = y + (s.o + k) * p.y_stride;
      for (int64_t d = 0; d < D; ++d) acc[d] += am * Acc(jagged2_widen(yk[d]));
    }
    for (int64_t d = 0; d < D; ++d) out[d] = jagged2_narrow<T>(acc[d]);
  }
}

template <class T, class Acc>
void compute(const Params& p, int threads) {
  // Grain: samples per task so that a task holds about 2^16 multiply-adds of an average sample.
  const int64_t work = std::max<int64_t>(1, (p.total_L + 1) * (p.D + 1));
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) * p.B / work);
  core::parallel_for(p.B, grain, threads, [&](int64_t b0, int64_t b1) {
    std::vector<Acc> acc(static_cast<size_t>(p.D)), yt;  // acc: D (ay, ayt) or n (xyt) wide
    for (int64_t b = b0; b < b1; ++b) sample<T, Acc>(p, b, acc, yt);
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  return jagged_cpu::by_dtype(p.dtype, "jagged² bmm", [&](auto t, auto acc) {
    compute<decltype(t), decltype(acc)>(p, ctx.num_threads);
  });
}

}  // namespace recops::ops::j2bmm
