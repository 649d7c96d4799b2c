// ops/jagged/common/bmm_cpu.cpp: cpu_generic of jagged_dense_bmm and jagged_jagged_bmm. Each
// sequence is one GEMM C = A · B (bmm_gemm() in bmm_params.h); work items are (sequence, tile of
// kTi rows x kTj columns of C) plus, for jagged_dense_bmm, one zero-fill item per sequence with
// truncated rows. Threads take contiguous item ranges of equal cost (tile area x inner extent),
// found by binary search over the cost prefix, so skewed lengths balance.
//
// Per tile: the inner extent in blocks of kKb; each block's A (kTi x kKb) and B (kKb x kTj)
// slices are converted once to the accumulator type into contiguous buffers (any strides, a
// transposed dense operand included), then acc[i][j] += A[i][k] * B[k][j] with j innermost (the
// loop the compiler vectorises). fp32 accumulation for fp32/fp16/bf16, fp64 for fp64; exact fp32
// products (allow_tf32 does not apply on the CPU). Each output's sum runs over k in order, whatever
// the tiling or the threads: bit-identical across runs.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "ops/jagged/common/bmm.h"
#include "ops/jagged/common/cpu_half.h"

namespace recops::ops::bmm {
namespace {
constexpr int64_t kTi = 32, kTj = 64, kKb = 64;
constexpr int64_t kMinCost = 1 << 16;  // multiply-adds per thread below which fewer threads start

template <class Acc, class T>
Acc load(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return cpu_half_to_float(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return to_float(v);
  else
    return static_cast<Acc>(v);
}
template <class T, class Acc>
T store(Acc v) {
  if constexpr (std::is_same_v<T, Half>)
    return cpu_half_from(v);  // common/cpu_half.h
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bf16_from_float(v);
  else
    return static_cast<T>(v);
}

// A tile (sequence b, C rows from i0, columns from j0), or with zero_rows > 0 the truncated rows
// [i0, i0 + zero_rows) of jagged_dense_bmm's z, written 0.
struct Item {
  int64_t b = 0, i0 = 0, j0 = 0, zero_rows = 0;
};

template <class T, class Acc>
void tile(const BmmParams& p, const BmmGemm& g, int64_t i0, int64_t j0) {
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  T* z = static_cast<T*>(p.z);
  const int64_t ti = std::min(kTi, g.rows - i0), tj = std::min(kTj, p.N - j0);
  Acc acc[kTi][kTj] = {};
  Acc a[kTi][kKb], bk[kKb][kTj];
  for (int64_t k0 = 0; k0 < g.inner; k0 += kKb) {
    const int64_t tk = std::min(kKb, g.inner - k0);
    for (int64_t i = 0; i < ti; ++i)
      for (int64_t k = 0; k < tk; ++k)
        a[i][k] = load<Acc>(x[g.a + (i0 + i) * g.a_si + (k0 + k) * g.a_sk]);
    for (int64_t k = 0; k < tk; ++k)
      for (int64_t j = 0; j < tj; ++j)
        bk[k][j] = load<Acc>(y[g.b + (k0 + k) * g.b_sk + (j0 + j) * g.b_sj]);
    for (int64_t i = 0; i < ti; ++i)
      for (int64_t k = 0; k < tk; ++k) {
        const Acc av = a[i][k];
        for (int64_t j = 0; j < tj; ++j) acc[i][j] += av * bk[k][j];
      }
  }
  for (int64_t i = 0; i < ti; ++i) {
    T* row = z + g.c + (i0 + i) * g.c_si + j0;
    for (int64_t j = 0; j < tj; ++j) row[j] = store<T>(acc[i][j]);
  }
}

template <class T, class Acc>
void compute(const BmmParams& p, int threads) {
  const int64_t col_tiles = (p.N + kTj - 1) / kTj;
  std::vector<Item> items;
  std::vector<int64_t> cost{0};  // cost[i]: the cost of the items before i
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t o = bmm_offset(p, b), rows = std::max<int64_t>(0, bmm_offset(p, b + 1) - o);
    const int64_t n = std::min(rows, p.max_L);
    const BmmGemm g = bmm_gemm(p, b, o, n);
    for (int64_t i0 = 0; i0 < g.rows; i0 += kTi)
      for (int64_t t = 0; t < col_tiles; ++t) {
        items.push_back({b, i0, t * kTj, 0});
        cost.push_back(cost.back() + std::min(kTi, g.rows - i0) * kTj * (g.inner + 1));
      }
    if (p.mode == BmmMode::jagged_dense && n < rows) {
      items.push_back({b, o + n, 0, rows - n});
      cost.push_back(cost.back() + (rows - n) * p.N);
    }
  }
  const int64_t total = cost.back(), count = static_cast<int64_t>(items.size());
  const int nt = core::max_threads(threads, std::max<int64_t>(1, total / kMinCost));
  auto first_item = [&](int64_t t) {  // the first item whose cost prefix reaches t's share
    return static_cast<int64_t>(std::lower_bound(cost.begin(), cost.end() - 1, total * t / nt) -
                                cost.begin());
  };
  core::parallel_for(nt, 1, nt, [&](int64_t t0, int64_t t1) {
    const int64_t end = t1 == nt ? count : first_item(t1);
    for (int64_t i = first_item(t0); i < end; ++i) {
      const Item& it = items[static_cast<size_t>(i)];
      if (it.zero_rows > 0) {
        T* z = static_cast<T*>(p.z) + it.i0 * p.N;
        std::fill(z, z + it.zero_rows * p.N, store<T>(Acc(0)));
        continue;
      }
      const int64_t o = bmm_offset(p, it.b);
      const int64_t n = std::min(std::max<int64_t>(0, bmm_offset(p, it.b + 1) - o), p.max_L);
      tile<T, Acc>(p, bmm_gemm(p, it.b, o, n), it.i0, it.j0);
    }
  });
}
}  // namespace

Status run_cpu(const BmmParams& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp64: compute<double, double>(p, ctx.num_threads); break;
    case DType::fp32: compute<float, float>(p, ctx.num_threads); break;
    case DType::fp16: compute<Half, float>(p, ctx.num_threads); break;
    case DType::bf16: compute<BFloat16, float>(p, ctx.num_threads); break;
    default:
      return Status(StatusCode::internal, "jagged bmm: cpu_generic reached with a bad dtype");
  }
  return Status::Ok();
}

}  // namespace recops::ops::bmm
