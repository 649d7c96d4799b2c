// ops/jagged/common/bmm_cpu_kernel.h: the CPU path of jagged_dense_bmm and jagged_jagged_bmm,
// built twice: cpu_generic (bmm_cpu.cpp, baseline flags) and cpu_avx2 (bmm_cpu_avx2.cpp: AVX2 +
// FMA + F16C, CMakeLists.txt). Each sequence is one GEMM C = A · B (bmm_gemm() in bmm_params.h);
// work items are (sequence, tile of kTi rows x kTj columns of C) plus, for jagged_dense_bmm, one
// zero-fill item per sequence with truncated rows. Threads take contiguous item ranges of equal
// cost (tile area x inner extent), found by binary search over the cost prefix, so skewed lengths
// balance.
//
// Per tile: the inner extent in blocks of kKb; each block's A (kTi x kKb) and B (kKb x kTj)
// slices are converted once to the accumulator type into contiguous buffers (any strides, a
// transposed dense operand included); then a register-blocked micro-kernel: kIr rows x kJv
// vectors of kW columns of C stay in vector registers (GCC/Clang vector extensions:
// vectors of the build's register width: 16 bytes in the baseline build, 32 in the AVX2 one) while
// k runs through the block: acc[i][j] += A[i][k] * B[k][j]. fp32 accumulation for
// fp32/fp16/bf16, fp64 for fp64; exact fp32 products (allow_tf32 does not apply on the CPU; the
// AVX2 build fuses the multiply-add). Each output's sum runs over k in order, whatever the
// threads: bit-identical across runs and thread counts (per implementation).
//
// jagged_jagged_bmm, when all its sequences give fewer than kMinItems tiles (e.g. one 2^20-row
// sequence, small M and N): sequences longer than kSplitRows are split along l into at most
// kMaxChunks chunks of equal length, each a work item writing a partial tile; a second pass adds
// each tile's partials in chunk order (a fixed-order reduction; the split depends on the shape
// only, never on the threads).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/jagged/common/bmm.h"
#include "ops/jagged/common/cpu_io.h"

namespace recops::ops::bmm {
namespace {
constexpr int64_t kTi = 48, kTj = 64, kKb = 64;
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

// A vector of Acc the width of the build's registers (32 bytes with AVX2, else 16: no function
// passes a vector wider than the ABI's registers) and its unaligned load/store.
#if defined(__AVX2__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif
template <class Acc>
struct Vec;
template <>
struct Vec<float> {
  typedef float type __attribute__((vector_size(kVecBytes)));
};
template <>
struct Vec<double> {
  typedef double type __attribute__((vector_size(kVecBytes)));
};
template <class Acc>
using VecT = typename Vec<Acc>::type;
template <class Acc>
constexpr int64_t kW = static_cast<int64_t>(kVecBytes / sizeof(Acc));  // columns per vector

template <class Acc>
inline VecT<Acc> vload(const Acc* p) {
  VecT<Acc> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <class Acc>
inline void vstore(Acc* p, VecT<Acc> v) {
  std::memcpy(p, &v, sizeof(v));
}

// n elements of src (unit stride) converted to Acc into dst. bf16 -> fp32 is a 16-bit shift, done
// eight at a time in vectors (the scalar loop through BFloat16 did not vectorise: about a fifth of
// the time at M1 went to it), and fp16 -> fp32 eight at a time with F16C in the AVX2 build; other
// types through load().
template <class T, class Acc>
inline void convert(const T* src, int64_t n, Acc* dst) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, BFloat16> && std::is_same_v<Acc, float>) {
    typedef uint16_t U16 __attribute__((vector_size(16)));
    typedef uint32_t U32 __attribute__((vector_size(32)));
    for (; i + 8 <= n; i += 8) {
      U16 h;
      std::memcpy(&h, src + i, sizeof h);
      const U32 w = __builtin_convertvector(h, U32) << 16;
      std::memcpy(dst + i, &w, sizeof w);
    }
  }
#if defined(__F16C__) && defined(__FLT16_MAX__)
  if constexpr (std::is_same_v<T, Half> && std::is_same_v<Acc, float>) {  // vcvtph2ps
    typedef _Float16 H8 __attribute__((vector_size(16)));
    typedef float F8 __attribute__((vector_size(32)));
    for (; i + 8 <= n; i += 8) {
      H8 h;
      std::memcpy(&h, src + i, sizeof h);
      const F8 w = __builtin_convertvector(h, F8);
      std::memcpy(dst + i, &w, sizeof w);
    }
  }
#endif
  for (; i < n; ++i) dst[i] = load<Acc>(src[i]);
}

// The micro-kernel: rows [i0, i0 + kIr) x columns [j0, j0 + kJv·kW) of acc += A · bk over k in
// [0, tk), kIr·kJv vector accumulators held in registers through the k loop (k in order). A's
// element (i, k) is a[i·kKb + k] (row-major) or a[k·kTi + i] (kKmajor), whichever packing the
// source converts contiguously.
template <class Acc, int kIr, int kJv, bool kKmajor>
inline void micro(const Acc* a, const Acc (*bk)[kTj], int64_t tk, int64_t i0, int64_t j0,
                  Acc (*acc)[kTj]) {
  using V = VecT<Acc>;
  constexpr int64_t asi = kKmajor ? 1 : kKb, ask = kKmajor ? kTi : 1;  // compile-time strides
  V r[kIr][kJv];
  for (int i = 0; i < kIr; ++i)
    for (int v = 0; v < kJv; ++v) r[i][v] = vload(&acc[i0 + i][j0 + v * kW<Acc>]);
  const Acc* ai = a + i0 * asi;
  for (int64_t k = 0; k < tk; ++k, ai += ask) {
    V b[kJv];
    for (int v = 0; v < kJv; ++v) b[v] = vload(&bk[k][j0 + v * kW<Acc>]);
    for (int i = 0; i < kIr; ++i) {
      const Acc av = ai[i * asi];
      for (int v = 0; v < kJv; ++v) r[i][v] += av * b[v];
    }
  }
  for (int i = 0; i < kIr; ++i)
    for (int v = 0; v < kJv; ++v) vstore(&acc[i0 + i][j0 + v * kW<Acc>], r[i][v]);
}

// acc = A(i0.., k0..k1) · B(k0..k1, j0..) for one tile, in order of k. Rows past the tile's ti
// (up to a multiple of kIr) and columns past tj are computed from zeros and never stored.
template <class T, class Acc>
void tile(const BmmParams& p, const BmmGemm& g, const Item& it, Acc (&acc)[kTi][kTj]) {
  // 12 vector accumulators (6 rows x 16 fp32 / 8 fp64 columns): with the two B vectors and the
  // broadcast 15 of the 16 vector registers, and enough independent sums to cover the FMA latency.
  constexpr int kIr = 6, kJv = 2;
  constexpr int64_t kJb = kJv * kW<Acc>;
  static_assert(kTi % kIr == 0 && kTj % kJb == 0);
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  const int64_t ti = std::min(kTi, g.rows - it.i0), tj = std::min(kTj, p.N - it.j0);
  const int64_t ri = (ti + kIr - 1) / kIr * kIr, rj = (tj + kJb - 1) / kJb * kJb;
  // A packed k-major (a[k][i]) when its rows are the source's columns (jagged_jagged_bmm's x^T),
  // else row-major (a[i][k]); either way each source run converts contiguously.
  const bool kmajor = g.a_si == 1 && g.a_sk != 1;
  alignas(64) Acc a[kTi * kKb];
  alignas(64) Acc bk[kKb][kTj];
  for (int64_t k0 = it.k0; k0 < it.k1; k0 += kKb) {
    const int64_t tk = std::min(kKb, it.k1 - k0);
    if (kmajor) {
      for (int64_t k = 0; k < tk; ++k) {
        convert(x + g.a + it.i0 + (k0 + k) * g.a_sk, ti, a + k * kTi);
        std::fill(a + k * kTi + ti, a + k * kTi + ri, Acc(0));
      }
    } else {
      for (int64_t i = 0; i < ti; ++i) {
        const T* src = x + g.a + (it.i0 + i) * g.a_si + k0 * g.a_sk;
        if (g.a_sk == 1)
          convert(src, tk, a + i * kKb);
        else
          for (int64_t k = 0; k < tk; ++k) a[i * kKb + k] = load<Acc>(src[k * g.a_sk]);
      }
      for (int64_t i = ti; i < ri; ++i) std::fill(a + i * kKb, a + i * kKb + tk, Acc(0));
    }
    for (int64_t k = 0; k < tk; ++k) {
      const T* src = y + g.b + (k0 + k) * g.b_sk + it.j0 * g.b_sj;
      if (g.b_sj == 1)
        convert(src, tj, bk[k]);
      else
        for (int64_t j = 0; j < tj; ++j) bk[k][j] = load<Acc>(src[j * g.b_sj]);
      for (int64_t j = tj; j < rj; ++j) bk[k][j] = 0;  // columns past N: computed, never stored
    }
    for (int64_t i0 = 0; i0 < ri; i0 += kIr)
      for (int64_t j0 = 0; j0 < rj; j0 += kJb)
        if (kmajor)
          micro<Acc, kIr, kJv, true>(a, bk, tk, i0, j0, acc);
        else
          micro<Acc, kIr, kJv, false>(a, bk, tk, i0, j0, acc);
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

// The entry both builds share (bmm_cpu.cpp: run_cpu, bmm_cpu_avx2.cpp: run_cpu_avx2).
inline Status run_cpu_kernel(const BmmParams& p, const Context& ctx) {
  return jagged_cpu::by_dtype(p.dtype, "jagged bmm", [&](auto t, auto acc) {
    compute<decltype(t), decltype(acc)>(p, ctx.num_threads);
  });
}
}  // namespace

}  // namespace recops::ops::bmm
