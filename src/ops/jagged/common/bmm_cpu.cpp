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
// the threads: bit-identical across runs and thread counts.
//
// jagged_jagged_bmm, when all its sequences give fewer than kMinItems tiles (e.g. one 2^20-row
// sequence, small M and N): sequences longer than kSplitRows are split along l into at most
// kMaxChunks chunks of equal length, each a work item writing a partial tile; a second pass adds
// each tile's partials in chunk order (a fixed-order reduction; the split depends on the shape
// only, never on the threads).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "ops/jagged/common/bmm.h"
#include "ops/jagged/common/cpu_io.h"

namespace recops::ops::bmm {
namespace {
constexpr int64_t kTi = 32, kTj = 64, kKb = 64, kJr = 16;  // kTj: a multiple of kJr
constexpr int64_t kMinCost = 1 << 16;  // multiply-adds per thread below which fewer threads start
// jagged_jagged_bmm's split of long sequences (when all sequences give fewer than kMinItems tiles).
constexpr int64_t kMinItems = 128, kSplitRows = 8192, kMaxChunks = 32;

using jagged_cpu::load;
using jagged_cpu::store;

// A tile (sequence b, C rows from i0, columns from j0) over the inner range [k0, k1), written to
// z, or (slot >= 0) as a partial tile to slot `slot` of the split buffer; or with zero_rows > 0
// the truncated rows [i0, i0 + zero_rows) of jagged_dense_bmm's z, written 0.
struct Item {
  int64_t b = 0, i0 = 0, j0 = 0, k0 = 0, k1 = 0, zero_rows = 0, slot = -1;
};
// A split tile: its partials in slots [slot, slot + chunks), added in that order into z.
struct Split {
  int64_t b = 0, i0 = 0, j0 = 0, slot = 0, chunks = 0;
};

// acc = A(i0.., k0..k1) · B(k0..k1, j0..) for one tile, in order of k.
template <class T, class Acc>
void tile(const BmmParams& p, const BmmGemm& g, const Item& it, Acc (&acc)[kTi][kTj]) {
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  const int64_t ti = std::min(kTi, g.rows - it.i0), tj = std::min(kTj, p.N - it.j0);
  Acc a[kTi][kKb], bk[kKb][kTj];
  for (int64_t k0 = it.k0; k0 < it.k1; k0 += kKb) {
    const int64_t tk = std::min(kKb, it.k1 - k0);
    for (int64_t i = 0; i < ti; ++i)
      for (int64_t k = 0; k < tk; ++k)
        a[i][k] = load<Acc>(x[g.a + (it.i0 + i) * g.a_si + (k0 + k) * g.a_sk]);
    for (int64_t k = 0; k < tk; ++k) {
      for (int64_t j = 0; j < tj; ++j)
        bk[k][j] = load<Acc>(y[g.b + (k0 + k) * g.b_sk + (it.j0 + j) * g.b_sj]);
      for (int64_t j = tj; j < kTj; ++j) bk[k][j] = 0;  // columns past N: computed, never stored
    }
    // kJr columns of a row stay in registers over the k-block (fixed width: the compiler keeps
    // them in vector registers); each output still sums over k in order.
    for (int64_t i = 0; i < ti; ++i)
      for (int64_t j0 = 0; j0 < tj; j0 += kJr) {
        Acc r[kJr];
        for (int64_t j = 0; j < kJr; ++j) r[j] = acc[i][j0 + j];
        for (int64_t k = 0; k < tk; ++k) {
          const Acc av = a[i][k];
          for (int64_t j = 0; j < kJr; ++j) r[j] += av * bk[k][j0 + j];
        }
        for (int64_t j = 0; j < kJr; ++j) acc[i][j0 + j] = r[j];
      }
  }
}

template <class T, class Acc>
void store_tile(const BmmParams& p, const BmmGemm& g, int64_t i0, int64_t j0,
                const Acc (&acc)[kTi][kTj]) {
  T* z = static_cast<T*>(p.z);
  const int64_t ti = std::min(kTi, g.rows - i0), tj = std::min(kTj, p.N - j0);
  for (int64_t i = 0; i < ti; ++i) {
    T* row = z + g.c + (i0 + i) * g.c_si + j0;
    for (int64_t j = 0; j < tj; ++j) row[j] = store<T>(acc[i][j]);
  }
}

// Runs fn(i) for i in [0, count) over threads taking contiguous ranges of equal cost (cost[i]: the
// cost of the items before i; binary search over that prefix).
template <class F>
void balanced_for(const std::vector<int64_t>& cost, int threads, F&& fn) {
  const int64_t total = cost.back(), count = static_cast<int64_t>(cost.size()) - 1;
  const int nt = core::max_threads(threads, std::max<int64_t>(1, total / kMinCost));
  auto first_item = [&](int64_t t) {
    return static_cast<int64_t>(std::lower_bound(cost.begin(), cost.end() - 1, total * t / nt) -
                                cost.begin());
  };
  core::parallel_for(nt, 1, nt, [&](int64_t t0, int64_t t1) {
    const int64_t end = t1 == nt ? count : first_item(t1);
    for (int64_t i = first_item(t0); i < end; ++i) fn(i);
  });
}

template <class T, class Acc>
void compute(const BmmParams& p, int threads) {
  const int64_t col_tiles = (p.N + kTj - 1) / kTj;
  struct Seq {
    BmmGemm g;
    int64_t o = 0, rows = 0;  // the sequence's first row and its rows L_b (clamped)
  };
  auto seq_of = [&](int64_t b) {
    Seq s;
    s.o = bmm_offset(p, b);
    s.rows = std::max<int64_t>(0, bmm_offset(p, b + 1) - s.o);
    s.g = bmm_gemm(p, b, s.o, std::min(s.rows, p.max_L));
    return s;
  };
  // jagged_jagged_bmm with few tiles in all: sequences longer than kSplitRows are split along l
  // into at most kMaxChunks chunks (a rule of the shape only, never of the threads, so results do
  // not depend on the thread count); the chunks' partial tiles are added in chunk order.
  int64_t tiles = 0;
  for (int64_t b = 0; b < p.B && tiles < kMinItems; ++b)
    tiles += (seq_of(b).g.rows + kTi - 1) / kTi * col_tiles;
  const bool split = p.mode == BmmMode::jagged_jagged && tiles < kMinItems;
  std::vector<Item> items;
  std::vector<Split> splits;
  std::vector<int64_t> cost{0};
  int64_t slots = 0;
  for (int64_t b = 0; b < p.B; ++b) {
    const Seq sq = seq_of(b);
    const BmmGemm& g = sq.g;
    const int64_t chunk = std::max(kSplitRows, (g.inner + kMaxChunks - 1) / kMaxChunks);
    const int64_t chunks = split && g.inner > kSplitRows ? (g.inner + chunk - 1) / chunk : 1;
    for (int64_t i0 = 0; i0 < g.rows; i0 += kTi)
      for (int64_t t = 0; t < col_tiles; ++t) {
        if (chunks > 1) splits.push_back({b, i0, t * kTj, slots, chunks});
        for (int64_t c = 0; c < chunks; ++c) {
          const int64_t k0 = c * chunk, k1 = chunks > 1 ? std::min(g.inner, k0 + chunk) : g.inner;
          items.push_back({b, i0, t * kTj, k0, k1, 0, chunks > 1 ? slots++ : -1});
          cost.push_back(cost.back() + std::min(kTi, g.rows - i0) * kTj * (k1 - k0 + 1));
        }
      }
    if (p.mode == BmmMode::jagged_dense && g.rows < sq.rows) {  // truncated rows l >= n_b
      items.push_back({b, sq.o + g.rows, 0, 0, 0, sq.rows - g.rows, -1});
      cost.push_back(cost.back() + (sq.rows - g.rows) * p.N);
    }
  }
  std::vector<Acc> partial(static_cast<size_t>(slots * kTi * kTj));
  balanced_for(cost, threads, [&](int64_t i) {
    const Item& it = items[static_cast<size_t>(i)];
    if (it.zero_rows > 0) {
      T* z = static_cast<T*>(p.z) + it.i0 * p.N;
      std::fill(z, z + it.zero_rows * p.N, store<T>(Acc(0)));
      return;
    }
    const BmmGemm g = seq_of(it.b).g;
    Acc acc[kTi][kTj] = {};
    tile<T, Acc>(p, g, it, acc);
    if (it.slot < 0)
      store_tile<T>(p, g, it.i0, it.j0, acc);
    else
      std::copy(&acc[0][0], &acc[0][0] + kTi * kTj, partial.data() + it.slot * kTi * kTj);
  });
  if (splits.empty()) return;
  std::vector<int64_t> reduce_cost{0};
  for (const Split& s : splits) reduce_cost.push_back(reduce_cost.back() + s.chunks * kTi * kTj);
  balanced_for(reduce_cost, threads, [&](int64_t i) {
    const Split& s = splits[static_cast<size_t>(i)];
    Acc acc[kTi][kTj] = {};
    for (int64_t c = 0; c < s.chunks; ++c) {  // chunk order: the fixed-order reduction
      const Acc* part = partial.data() + (s.slot + c) * kTi * kTj;
      for (int64_t e = 0; e < kTi * kTj; ++e) acc[e / kTj][e % kTj] += part[e];
    }
    store_tile<T>(p, seq_of(s.b).g, s.i0, s.j0, acc);
  });
}
}  // namespace

Status run_cpu(const BmmParams& p, const Context& ctx) {
  return jagged_cpu::by_dtype(p.dtype, "jagged bmm", [&](auto t, auto acc) {
    compute<decltype(t), decltype(acc)>(p, ctx.num_threads);
  });
}

}  // namespace recops::ops::bmm
