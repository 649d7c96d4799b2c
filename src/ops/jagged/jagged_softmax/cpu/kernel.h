// jagged/jagged_softmax/cpu/kernel.h: the CPU path, built twice: cpu_generic
// (jagged_softmax_cpu.cpp) and cpu_avx2 (jagged_softmax_cpu_avx2.cpp: AVX2 + FMA + F16C, where the
// fp32 exp is core::exp_poly_f32 and fp16 converts in hardware). Work items are
// (sequence, block of up to kCols columns); threads take contiguous item ranges of equal cost (rows
// x columns, each sequence counted one row more so that empty ones cost something), found by binary
// search over the items' cost prefix. Per item, passes over the sequence's rows with the column
// block's statistics in fp32 (fp64 for fp64; the backward's dot in fp64 always), plain loops over
// the block the compiler can vectorise:
//   forward:  max, sum of exp(x - max), write exp(x - max) / sum (fp32 and fp64 keep the
//             exponentials in the output between the last two passes)
//   backward: dot = sum grad * y, write y * (grad - dot)
// Truncated rows (n_b <= l < L_b) are written 0. Offsets are clamped into [0, total_L].
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/exp_poly.h"
#include "core/parallel.h"
#include "core/scalar.h"
#include "ops/jagged/common/cpu_io.h"
#include "ops/jagged/jagged_softmax/impls.h"

namespace recops::ops::jagged_softmax_ns {
namespace {
constexpr int64_t kCols = 64;          // the column block of one work item
constexpr int64_t kMinCost = 1 << 15;  // elements per thread below which fewer threads start

// The forward's exp: for fp32 statistics in the AVX2 build core::exp_poly_f32 (core/exp_poly.h,
// about 1 ulp), which the column loops vectorise; else std::exp (a libm call per element).
template <class Acc>
inline Acc exp_acc(Acc x) {
#if defined(__AVX2__)
  if constexpr (std::is_same_v<Acc, float>) return core::exp_poly_f32(x);
#endif
  return std::exp(x);
}

using jagged_cpu::load;
// One rounding from float or double to T.

template <class T, class V>
T store(V v) {
  if constexpr (std::is_same_v<T, Half>)
    return cpu_half_from(v);  // common/cpu_half.h
  else if constexpr (std::is_same_v<T, BFloat16> && std::is_same_v<V, float>)
    return cpu_bf16_from_float(v);  // common/cpu_half.h
  else if constexpr (std::is_same_v<T, BFloat16>)
    return cpu_bf16_from_double(v);  // common/cpu_half.h
  else
    return static_cast<T>(v);
}

struct Item {
  int64_t start, rows, n, h0, w;  // rows: L_b (clamped); n = min(rows, max_L); columns [h0, h0+w)
};

template <class T, class Acc>
void forward_item(const Params& p, const Item& it) {
  const T* x = static_cast<const T*>(p.a);
  T* y = static_cast<T*>(p.out);
  Acc m[kCols], s[kCols];
  const Acc inf = std::numeric_limits<Acc>::infinity();
  for (int64_t j = 0; j < it.w; ++j) m[j] = -inf, s[j] = 0;
  for (int64_t l = 0; l < it.n; ++l) {
    const T* row = x + (it.start + l) * p.a_row_stride + it.h0;
    for (int64_t j = 0; j < it.w; ++j) {
      const Acc v = load<Acc>(row[j]);
      m[j] = (v > m[j] || v != v) ? v : m[j];  // a NaN sticks: nothing compares above it
    }
  }
  if constexpr (std::is_same_v<T, Acc>) {
    // fp32 and fp64: the exponentials go to the output, then are divided in place (one exp each).
    for (int64_t l = 0; l < it.n; ++l) {
      const T* row = x + (it.start + l) * p.a_row_stride + it.h0;
      T* orow = y + (it.start + l) * p.H + it.h0;
      for (int64_t j = 0; j < it.w; ++j) s[j] += (orow[j] = exp_acc<Acc>(row[j] - m[j]));
    }
    for (int64_t l = 0; l < it.n; ++l) {
      T* orow = y + (it.start + l) * p.H + it.h0;
      for (int64_t j = 0; j < it.w; ++j) orow[j] = m[j] == -inf ? Acc(0) : orow[j] / s[j];
    }
  } else {
    // 16-bit outputs cannot hold the unrounded exponentials: computed again in the write pass.
    for (int64_t l = 0; l < it.n; ++l) {
      const T* row = x + (it.start + l) * p.a_row_stride + it.h0;
      for (int64_t j = 0; j < it.w; ++j) s[j] += exp_acc<Acc>(load<Acc>(row[j]) - m[j]);
    }
    for (int64_t l = 0; l < it.n; ++l) {
      const T* row = x + (it.start + l) * p.a_row_stride + it.h0;
      T* orow = y + (it.start + l) * p.H + it.h0;
      for (int64_t j = 0; j < it.w; ++j) {  // both sides computed: a select, no branch
        const Acc e = exp_acc<Acc>(load<Acc>(row[j]) - m[j]) / s[j];
        orow[j] = store<T>(m[j] == -inf ? Acc(0) : e);
      }
    }
  }
}

template <class T, class Acc>
void backward_item(const Params& p, const Item& it) {
  const T* g = static_cast<const T*>(p.a);
  const T* yv = static_cast<const T*>(p.b);
  T* dx = static_cast<T*>(p.out);
  // fp64 for every dtype: grad - dot cancels wherever grad is close to the column's mean.
  double dot[kCols];
  for (int64_t j = 0; j < it.w; ++j) dot[j] = 0;
  for (int64_t l = 0; l < it.n; ++l) {
    const T* grow = g + (it.start + l) * p.a_row_stride + it.h0;
    const T* yrow = yv + (it.start + l) * p.b_row_stride + it.h0;
    for (int64_t j = 0; j < it.w; ++j)
      dot[j] += static_cast<double>(load<Acc>(grow[j])) * load<Acc>(yrow[j]);
  }
  for (int64_t l = 0; l < it.n; ++l) {
    const T* grow = g + (it.start + l) * p.a_row_stride + it.h0;
    const T* yrow = yv + (it.start + l) * p.b_row_stride + it.h0;
    T* orow = dx + (it.start + l) * p.H + it.h0;
    for (int64_t j = 0; j < it.w; ++j)
      orow[j] = store<T>(static_cast<double>(load<Acc>(yrow[j])) * (load<Acc>(grow[j]) - dot[j]));
  }
}

template <class T, class Acc>
void compute(const Params& p, int threads) {
  const int64_t blocks = (p.H + kCols - 1) / kCols;
  const int64_t items = p.B * blocks;
  auto offset = [&](int64_t i) {
    return core::clamp_offset(
        core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i), p.total_L);
  };
  // cost[i]: the cost of the items before i (item i = (b, block) = (i / blocks, i % blocks)).
  std::vector<int64_t> cost(static_cast<size_t>(items) + 1, 0);
  for (int64_t i = 0; i < items; ++i) {
    const int64_t b = i / blocks, h0 = (i % blocks) * kCols;
    const int64_t rows = std::max<int64_t>(0, offset(b + 1) - offset(b));
    cost[i + 1] = cost[i] + (rows + 1) * std::min(kCols, p.H - h0);
  }
  const int64_t total = cost.back();
  const int nt = core::max_threads(threads, std::max<int64_t>(1, total / kMinCost));
  auto first_item = [&](int64_t t) {  // the first item whose cost prefix reaches t's share
    return static_cast<int64_t>(std::lower_bound(cost.begin(), cost.end() - 1, total * t / nt) -
                                cost.begin());
  };
  core::parallel_for(nt, 1, nt, [&](int64_t t0, int64_t t1) {
    const int64_t end_item = t1 == nt ? items : first_item(t1);
    T* out = static_cast<T*>(p.out);
    for (int64_t i = first_item(t0); i < end_item; ++i) {
      Item it;
      const int64_t b = i / blocks;
      it.start = offset(b);
      it.rows = std::max<int64_t>(0, offset(b + 1) - it.start);
      it.n = std::min(it.rows, p.max_L);
      it.h0 = (i % blocks) * kCols;
      it.w = std::min(kCols, p.H - it.h0);
      if (p.backward)
        backward_item<T, Acc>(p, it);
      else
        forward_item<T, Acc>(p, it);
      for (int64_t l = it.n; l < it.rows; ++l)  // truncated rows
        std::fill_n(out + (it.start + l) * p.H + it.h0, it.w, store<T>(Acc(0)));
    }
  });
}

// cpu_generic or cpu_avx2, as the including file's ISA makes this header.
Status run(const Params& p, const Context& ctx) {
  return jagged_cpu::by_dtype(p.dtype, "jagged_softmax", [&](auto t, auto acc) {
    compute<decltype(t), decltype(acc)>(p, ctx.num_threads);
  });
}
}  // namespace

}  // namespace recops::ops::jagged_softmax_ns
