// jagged/jagged_softmax/cpu/kernel.h: the CPU path, built twice: cpu_generic
// (jagged_softmax_cpu.cpp) and cpu_avx2 (jagged_softmax_cpu_avx2.cpp: AVX2 + FMA + F16C, where the
// fp32 exp is core::exp_poly_f32 and fp16 converts in hardware). Work items are
// (sequence, block of up to kCols columns); threads take contiguous item ranges of equal cost (rows
// x columns, each sequence counted one row more so that empty ones cost something), found by binary
// search over the items' cost prefix. Per item, passes over the sequence's rows with the column
// block's statistics in fp32 (fp64 for fp64; the backward's dot in fp64 always), plain loops over
// the block the compiler can vectorise:
//   forward:  max, sum of e = exp(x - max), write e * (1 / sum) (e kept between the last two
//             passes: in the output for fp32 and fp64, in a per-thread fp32 scratch for 16 bits)
//   backward: dot = sum grad * y (fp64), write y * (grad - dot) (fp64; for 16-bit inputs fp32
//             products and a two-float dot, see backward_item)
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
// The 16-bit forward's exponentials of one item, per thread: 256 KiB (within L2) covers kCols
// columns of sequences up to 1024 rows; longer ones compute them twice.
constexpr int64_t kScratch = 65536;

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
void forward_item(const Params& p, const Item& it, std::vector<Acc>& scratch) {
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
  // One exponential per element: they are kept unrounded (in the output for fp32 and fp64, else in
  // the caller's fp32 scratch when the item fits it) between the sum and the write pass, which
  // multiplies by the column's 1/sum (a column without a finite max, that is with no row or every
  // entry -inf, is written 0). A 16-bit item larger than the scratch computes them again.
  Acc inv[kCols];
  const auto finish = [&] {
    for (int64_t j = 0; j < it.w; ++j) inv[j] = Acc(1) / s[j];
  };
  if constexpr (std::is_same_v<T, Acc>) {
    for (int64_t l = 0; l < it.n; ++l) {
      const T* row = x + (it.start + l) * p.a_row_stride + it.h0;
      T* orow = y + (it.start + l) * p.H + it.h0;
      for (int64_t j = 0; j < it.w; ++j) s[j] += (orow[j] = exp_acc<Acc>(row[j] - m[j]));
    }
    finish();
    for (int64_t l = 0; l < it.n; ++l) {
      T* orow = y + (it.start + l) * p.H + it.h0;
      for (int64_t j = 0; j < it.w; ++j) orow[j] = m[j] == -inf ? Acc(0) : orow[j] * inv[j];
    }
  } else if (it.n * it.w <= kScratch) {
    if (static_cast<int64_t>(scratch.size()) < it.n * it.w)
      scratch.resize(static_cast<size_t>(it.n * it.w));
    Acc* e = scratch.data();
    for (int64_t l = 0; l < it.n; ++l) {
      const T* row = x + (it.start + l) * p.a_row_stride + it.h0;
      Acc* er = e + l * it.w;
      for (int64_t j = 0; j < it.w; ++j) s[j] += (er[j] = exp_acc<Acc>(load<Acc>(row[j]) - m[j]));
    }
    finish();
    for (int64_t l = 0; l < it.n; ++l) {
      const Acc* er = e + l * it.w;
      T* orow = y + (it.start + l) * p.H + it.h0;
      for (int64_t j = 0; j < it.w; ++j)  // both sides computed: a select, no branch
        orow[j] = store<T>(m[j] == -inf ? Acc(0) : er[j] * inv[j]);
    }
  } else {
    for (int64_t l = 0; l < it.n; ++l) {
      const T* row = x + (it.start + l) * p.a_row_stride + it.h0;
      for (int64_t j = 0; j < it.w; ++j) s[j] += exp_acc<Acc>(load<Acc>(row[j]) - m[j]);
    }
    finish();
    for (int64_t l = 0; l < it.n; ++l) {
      const T* row = x + (it.start + l) * p.a_row_stride + it.h0;
      T* orow = y + (it.start + l) * p.H + it.h0;
      for (int64_t j = 0; j < it.w; ++j) {
        const Acc e = exp_acc<Acc>(load<Acc>(row[j]) - m[j]) * inv[j];
        orow[j] = store<T>(m[j] == -inf ? Acc(0) : e);
      }
    }
  }
}

// backward, exactly as the README states: dot and y * (grad - dot) in fp64.
template <class T, class Acc>
void backward_item_fp64(const Params& p, const Item& it) {
  const T* g = static_cast<const T*>(p.a);
  const T* yv = static_cast<const T*>(p.b);
  T* dx = static_cast<T*>(p.out);
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

// The dot in fp64 for every dtype: grad - dot cancels wherever grad is close to the column's mean
// (README). For 16-bit inputs a product of two of them is exact in fp32, so only the sum is fp64,
// and the write pass stays in fp32: dot = hi + lo (two floats), and (grad - hi) - lo is exact
// where grad and hi are close (Sterbenz) and one fp32 rounding of the result elsewhere, far below
// the 16-bit output's. That holds while nothing leaves fp32's range: an item with a product or a
// grad above 2^126 in magnitude, a non-finite one, or a dot past 2^126 runs backward_item_fp64.
template <class T, class Acc>
void backward_item(const Params& p, const Item& it) {
  if constexpr (sizeof(T) != 2) {
    backward_item_fp64<T, Acc>(p, it);
  } else {
    const T* g = static_cast<const T*>(p.a);
    const T* yv = static_cast<const T*>(p.b);
    T* dx = static_cast<T*>(p.out);
    constexpr float kBig = 0x1p126f;
    double dot[kCols];
    int32_t bad[kCols];  // nonzero: a product or grad of column j is not below kBig (NaN included)
    for (int64_t j = 0; j < it.w; ++j) dot[j] = 0, bad[j] = 0;
    for (int64_t l = 0; l < it.n; ++l) {
      const T* grow = g + (it.start + l) * p.a_row_stride + it.h0;
      const T* yrow = yv + (it.start + l) * p.b_row_stride + it.h0;
      for (int64_t j = 0; j < it.w; ++j) {
        const float gv = load<float>(grow[j]), pr = gv * load<float>(yrow[j]);
        bad[j] |= !(std::fabs(pr) < kBig && std::fabs(gv) < kBig);
        dot[j] += static_cast<double>(pr);
      }
    }
    int32_t any = 0;
    float hi[kCols], lo[kCols];
    for (int64_t j = 0; j < it.w; ++j) {
      any |= bad[j] | !(std::fabs(dot[j]) < kBig);
      hi[j] = static_cast<float>(dot[j]);
      lo[j] = static_cast<float>(dot[j] - hi[j]);
    }
    if (any) {
      backward_item_fp64<T, Acc>(p, it);
      return;
    }
    for (int64_t l = 0; l < it.n; ++l) {
      const T* grow = g + (it.start + l) * p.a_row_stride + it.h0;
      const T* yrow = yv + (it.start + l) * p.b_row_stride + it.h0;
      T* orow = dx + (it.start + l) * p.H + it.h0;
      for (int64_t j = 0; j < it.w; ++j)
        orow[j] = store<T>(load<float>(yrow[j]) * ((load<float>(grow[j]) - hi[j]) - lo[j]));
    }
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
    std::vector<Acc> scratch;  // forward_item's, grown to the largest item up to kScratch
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
        forward_item<T, Acc>(p, it, scratch);
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
