// jagged/jagged2_softmax/cpu/jagged2_softmax_cpu.cpp: cpu_generic. Threads take samples b in
// static chunks. Per block, passes over the n_b x n_b window row by row with one statistic per line
// (per row, or per column held in an array across the rows, so that the inner loop stays
// contiguous in both modes); fp32 statistics for fp32/fp16/bf16, fp64 for fp64 (the backward in
// fp64 always, rounded once: grad - dot cancels where grad is close to the line's mean):
//   forward:  max (a NaN sticks), sum of exp(x - max), write exp(x - max) / sum (0 for a line
//             whose valid entries are all -inf); fp32 and fp64 keep the exponentials in the
//             output between the last two passes
//   backward: dot = sum grad * y, write y * (grad - dot)
// Elements outside the window are written 0. Offsets are clamped (common/jagged2_blocks.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "recops/tensor_view.h"
#include "core/parallel.h"
#include "ops/jagged/common/jagged2_blocks.h"
#include "ops/jagged/common/jagged2_cpu.h"
#include "ops/jagged/jagged2_softmax/impls.h"

namespace recops::ops::jagged2_softmax_ns {
namespace {
template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Tr: lines are columns (statistic index c) instead of rows (index r).
template <bool Tr, class T>
void forward_window(const Params& p, const Jagged2Block& blk, int64_t n, AccOf<T>* mx,
                    AccOf<T>* sm) {
  using Acc = AccOf<T>;
  const T* x = static_cast<const T*>(p.a);
  T* y = static_cast<T*>(p.out);
  const int64_t N = blk.side, xs = p.a_stride;
  const Acc inf = std::numeric_limits<Acc>::infinity();
  for (int64_t s = 0; s < n; ++s) mx[s] = -inf, sm[s] = 0;
  for (int64_t r = 0; r < n; ++r) {
    const T* row = x + (blk.begin + r * N) * xs;
    for (int64_t c = 0; c < n; ++c) {
      const Acc v = jagged2_widen(row[c * xs]);
      Acc& m = mx[Tr ? c : r];
      m = (v > m || v != v) ? v : m;  // a NaN sticks: nothing compares above it
    }
  }
  if constexpr (std::is_same_v<T, Acc>) {
    // fp32 and fp64: the exponentials go to the output, then are divided in place (one exp each).
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + (blk.begin + r * N) * xs;
      T* orow = y + blk.begin + r * N;
      for (int64_t c = 0; c < n; ++c) {
        const int64_t s = Tr ? c : r;
        sm[s] += (orow[c] = std::exp(row[c * xs] - mx[s]));
      }
    }
    for (int64_t r = 0; r < n; ++r) {
      T* orow = y + blk.begin + r * N;
      for (int64_t c = 0; c < n; ++c) {
        const int64_t s = Tr ? c : r;
        orow[c] = mx[s] == -inf ? Acc(0) : orow[c] / sm[s];
      }
    }
  } else {
    // 16-bit outputs cannot hold the unrounded exponentials: computed again in the write pass.
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + (blk.begin + r * N) * xs;
      for (int64_t c = 0; c < n; ++c) {
        const int64_t s = Tr ? c : r;
        sm[s] += std::exp(jagged2_widen(row[c * xs]) - mx[s]);
      }
    }
    for (int64_t r = 0; r < n; ++r) {
      const T* row = x + (blk.begin + r * N) * xs;
      T* orow = y + blk.begin + r * N;
      for (int64_t c = 0; c < n; ++c) {
        const int64_t s = Tr ? c : r;
        const Acc e = std::exp(jagged2_widen(row[c * xs]) - mx[s]);
        orow[c] = jagged2_narrow<T>(mx[s] == -inf ? Acc(0) : e / sm[s]);
      }
    }
  }
}

template <bool Tr, class T>
void backward_window(const Params& p, const Jagged2Block& blk, int64_t n, double* dot) {
  const T* g = static_cast<const T*>(p.a);
  const T* yv = static_cast<const T*>(p.b);
  T* dx = static_cast<T*>(p.out);
  const int64_t N = blk.side, gs = p.a_stride, ys = p.b_stride;
  for (int64_t s = 0; s < n; ++s) dot[s] = 0;
  for (int64_t r = 0; r < n; ++r) {
    const T* grow = g + (blk.begin + r * N) * gs;
    const T* yrow = yv + (blk.begin + r * N) * ys;
    for (int64_t c = 0; c < n; ++c)
      dot[Tr ? c : r] += static_cast<double>(jagged2_widen(grow[c * gs])) *
                         static_cast<double>(jagged2_widen(yrow[c * ys]));
  }
  for (int64_t r = 0; r < n; ++r) {
    const T* grow = g + (blk.begin + r * N) * gs;
    const T* yrow = yv + (blk.begin + r * N) * ys;
    T* orow = dx + blk.begin + r * N;
    for (int64_t c = 0; c < n; ++c) {
      const double y = jagged2_widen(yrow[c * ys]), gr = jagged2_widen(grow[c * gs]);
      orow[c] = jagged2_narrow<T>(y * (gr - dot[Tr ? c : r]));
    }
  }
}

template <class T>
void run_typed(const Params& p, int threads) {
  T* out = static_cast<T*>(p.out);
  // The widest window: min(max_L, the largest side), and a side N has N² <= total elements. The
  // scratch and the grain use it, not max_L itself (max_L = 2^41 overflowed max_L² and asked for
  // 2^41-entry vectors: found by fuzz_jagged_entries).
  const int64_t L =
      std::min<int64_t>(p.max_L, static_cast<int64_t>(std::sqrt(static_cast<double>(p.total))) + 1);
  const int64_t w = std::max<int64_t>(1, TensorView::mul_sat(L, L));
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / w);
  core::parallel_for(p.B, grain, threads, [&](int64_t b0, int64_t b1) {
    std::vector<AccOf<T>> mx(static_cast<size_t>(L)), sm(static_cast<size_t>(L));
    std::vector<double> dot(static_cast<size_t>(L));
    for (int64_t b = b0; b < b1; ++b) {
      const Jagged2Block blk =
          jagged2_block_at(p.offsets, p.offsets_int64, p.offsets_stride, b, p.total);
      const int64_t N = blk.side, n = std::min(N, p.max_L);
      for (int64_t r = 0; r < N; ++r)  // outside the window: 0
        std::fill(out + blk.begin + r * N + (r < n ? n : 0), out + blk.begin + (r + 1) * N, T{});
      if (p.backward) {
        if (p.transpose)
          backward_window<true, T>(p, blk, n, dot.data());
        else
          backward_window<false, T>(p, blk, n, dot.data());
      } else if (p.transpose) {
        forward_window<true, T>(p, blk, n, mx.data(), sm.data());
      } else {
        forward_window<false, T>(p, blk, n, mx.data(), sm.data());
      }
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) { run_typed<decltype(t)>(p, ctx.num_threads); }))
    return Status(StatusCode::internal, "jagged2_softmax: cpu_generic: unsupported dtype");
  return Status::Ok();
}

}  // namespace recops::ops::jagged2_softmax_ns
