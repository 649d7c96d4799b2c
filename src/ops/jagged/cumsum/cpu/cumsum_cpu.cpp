// complete_cumsum/cpu: the optimized CPU scan. Many rows: rows split across threads, one serial
// scan each. Few long rows: a two-pass parallel scan per row (each thread sums its chunk, a serial
// prefix over the chunk sums, then each thread rescans its chunk from its carry). Sums are exact
// integers, so the split never changes the result.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/parallel.h"
#include "ops/jagged/cumsum/impls.h"

namespace recops::ops {
namespace {

const char* op_name(CumsumKind k) {
  return k == CumsumKind::complete    ? "complete_cumsum"
         : k == CumsumKind::exclusive ? "exclusive_cumsum"
                                      : "inclusive_cumsum";
}

#if defined(__SSE2__)
// int32 in, int32 out, unit stride, carry within int32: four sums a step (two shift-adds inside
// the vector, then the carry of the previous step), wrapping in 32 bits. The true (64-bit) sums
// stay within int32 exactly when no step overflows: a step overflows when its two operands (the
// previous sum, cur - x, and x) have the same sign and cur the other. Returns whether one did
// (the caller then finds the first such position with 64-bit sums); writes out[k] = the inclusive
// sum through k (after) or the sum before k.
template <bool kAfter>
bool scan_i32_sse2(const int32_t* in, int32_t* out, int64_t n, int32_t carry) {
  __m128i c = _mm_set1_epi32(carry), ovf = _mm_setzero_si128();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    __m128i v = _mm_add_epi32(x, _mm_slli_si128(x, 4));
    v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
    const __m128i cur = _mm_add_epi32(v, c);
    const __m128i prev = _mm_sub_epi32(cur, x);
    ovf = _mm_or_si128(ovf, _mm_and_si128(_mm_xor_si128(prev, cur), _mm_xor_si128(x, cur)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), kAfter ? cur : prev);
    c = _mm_shuffle_epi32(cur, 0xFF);
  }
  bool bad = _mm_movemask_ps(_mm_castsi128_ps(ovf)) != 0;
  int64_t sum = _mm_cvtsi128_si32(c);
  for (; i < n; ++i) {
    const int64_t before = sum;
    sum += in[i];
    bad |= sum < INT32_MIN || sum > INT32_MAX;
    out[i] = static_cast<int32_t>(kAfter ? sum : before);
  }
  return bad;
}
#endif

// Scans elements [i0, i1) of row r starting from `carry` (the sum of all inputs before i0), writing
// the matching outputs. Returns the first int32 overflow position, or -1. The hot loop has no
// branches: it stores and tracks the running minimum and maximum; only a row whose range leaves
// int32 is walked again to name the first bad position. A unit input stride gets its own loop.
template <class In, class Out>
int64_t scan_range(const CumsumParams& p, int64_t r, int64_t i0, int64_t i1, uint64_t carry) {
  const In* in = static_cast<const In*>(p.in) + r * p.in_row_stride;
  Out* out = static_cast<Out*>(p.out) + r * p.out_row_stride;
  // complete writes out[i+1] = sum through i; inclusive out[i] = the same; exclusive out[i] = sum
  // before i.
  const bool after = p.kind != CumsumKind::exclusive;
  const int64_t shift = p.kind == CumsumKind::complete ? 1 : 0;
  const int64_t stride = p.in_stride;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  bool simd = false;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<In, int32_t> && std::is_same_v<Out, int32_t>) {
    const int64_t c = static_cast<int64_t>(carry);
    if (stride == 1 && c >= INT32_MIN && c <= INT32_MAX) {
      const bool bad =
          after ? scan_i32_sse2<true>(in + i0, out + i0 + shift, i1 - i0, static_cast<int32_t>(c))
                : scan_i32_sse2<false>(in + i0, out + i0, i1 - i0, static_cast<int32_t>(c));
      lo = bad ? INT64_MIN : 0;  // bad: the walk below names the first position
      hi = 0;
      simd = true;
    }
  }
#endif
  auto run = [&](auto load) {
    uint64_t sum = carry;
    if (after) {
      for (int64_t i = i0; i < i1; ++i) {
        sum += static_cast<uint64_t>(static_cast<int64_t>(load(i)));
        const int64_t v = static_cast<int64_t>(sum);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        out[i + shift] = static_cast<Out>(v);
      }
    } else {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t v = static_cast<int64_t>(sum);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        out[i] = static_cast<Out>(v);
        sum += static_cast<uint64_t>(static_cast<int64_t>(load(i)));
      }
    }
  };
  if (!simd && stride == 1)
    run([in](int64_t i) { return in[i]; });
  else if (!simd)
    run([in, stride](int64_t i) { return in[i * stride]; });
  if constexpr (sizeof(Out) == 4) {
    if (lo < INT32_MIN || hi > INT32_MAX) {  // rare: find the first position that overflowed
      uint64_t sum = carry;
      for (int64_t i = i0; i < i1; ++i) {
        const uint64_t before = sum;
        sum += static_cast<uint64_t>(static_cast<int64_t>(in[i * stride]));
        const int64_t v = static_cast<int64_t>(after ? sum : before);
        if (v < INT32_MIN || v > INT32_MAX) return i + shift;
      }
    }
  }
  return -1;
}

template <class In>
uint64_t sum_range(const CumsumParams& p, int64_t r, int64_t i0, int64_t i1) {
  const In* in = static_cast<const In*>(p.in) + r * p.in_row_stride;
  uint64_t s = 0;
  for (int64_t i = i0; i < i1; ++i)
    s += static_cast<uint64_t>(static_cast<int64_t>(in[i * p.in_stride]));
  return s;
}

template <class In, class Out>
Status run(const CumsumParams& p, const Context& ctx) {
  std::vector<int64_t> bad_rows;  // first overflow per row, filled serially at the end
  auto fail = [&](int64_t r, int64_t pos) {
    return Status(StatusCode::out_of_range,
                  detail::cat(op_name(p.kind), ": the sum at output [", r, ", ", pos,
                              "] does not fit the int32 output; use out_dtype int64"));
  };
  const int threads = core::max_threads(ctx.num_threads);
  constexpr int64_t kParallelRow = int64_t{1} << 16;
  if (p.R >= threads || p.n < kParallelRow) {
    std::vector<int64_t> bad(static_cast<size_t>(p.R), -1);
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, p.n));
    core::parallel_for(p.R, grain, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        if (p.kind == CumsumKind::complete) static_cast<Out*>(p.out)[r * p.out_row_stride] = 0;
        bad[static_cast<size_t>(r)] = scan_range<In, Out>(p, r, 0, p.n, 0);
      }
    });
    for (int64_t r = 0; r < p.R; ++r)
      if (bad[static_cast<size_t>(r)] >= 0) return fail(r, bad[static_cast<size_t>(r)]);
    return Status::Ok();
  }
  // Few long rows: parallel two-pass scan of each row.
  for (int64_t r = 0; r < p.R; ++r) {
    if (p.kind == CumsumKind::complete) static_cast<Out*>(p.out)[r * p.out_row_stride] = 0;
    const int64_t chunks = threads;
    std::vector<uint64_t> sums(static_cast<size_t>(chunks) + 1, 0);
    auto chunk_begin = [&](int64_t c) { return p.n * c / chunks; };
    core::parallel_for(chunks, 1, ctx.num_threads, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        sums[static_cast<size_t>(c) + 1] = sum_range<In>(p, r, chunk_begin(c), chunk_begin(c + 1));
    });
    for (int64_t c = 0; c < chunks; ++c)
      sums[static_cast<size_t>(c) + 1] += sums[static_cast<size_t>(c)];
    std::vector<int64_t> bad(static_cast<size_t>(chunks), -1);
    core::parallel_for(chunks, 1, ctx.num_threads, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        bad[static_cast<size_t>(c)] = scan_range<In, Out>(p, r, chunk_begin(c), chunk_begin(c + 1),
                                                          sums[static_cast<size_t>(c)]);
    });
    for (int64_t c = 0; c < chunks; ++c)
      if (bad[static_cast<size_t>(c)] >= 0) return fail(r, bad[static_cast<size_t>(c)]);
  }
  return Status::Ok();
}

}  // namespace

Status cumsum_cpu(const CumsumParams& p, const Context& ctx) {
  if (p.in_int64)
    return p.out_int64 ? run<int64_t, int64_t>(p, ctx) : run<int64_t, int32_t>(p, ctx);
  return p.out_int64 ? run<int32_t, int64_t>(p, ctx) : run<int32_t, int32_t>(p, ctx);
}

}  // namespace recops::ops
