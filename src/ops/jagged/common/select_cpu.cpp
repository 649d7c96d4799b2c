// ops/jagged/common/select_cpu.cpp: the CPU path of the segment-select ops (select_params.h).
// Forward: the offsets of the input and output segments (host vectors), then threads copy whole
// output segments, balanced by rows (select_cpu.h); a segment of dense rows is one memcpy.
// Backward: a stable counting sort groups the output segments of each input segment in ascending
// order; threads take input segments balanced by rows read and sum each row's group in that order
// in fp64 for every dtype (the gradients of repeated indices may cancel; fp32 sums missed the
// single standard there): deterministic, no atomics.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ops/jagged/common/cpu_half.h"
#include "ops/jagged/common/cpu_stream.h"
#include "ops/jagged/common/select_cpu.h"
#include "ops/jagged/common/select_params.h"

namespace recops::ops {
namespace {
// Rows per thread: the costs below count rows, so a thread is started per 256 KiB of rows (the
// family's default of 16384 rows per thread kept a 9 MB selection of 1 KiB rows on one thread).
int64_t rows_per_thread(int64_t row_bytes) {
  return std::max<int64_t>(16, (int64_t{1} << 18) / std::max<int64_t>(1, row_bytes));
}

int64_t int_at(const void* p, bool int64, int64_t stride, int64_t i) {
  return int64 ? static_cast<const int64_t*>(p)[i * stride]
               : static_cast<const int32_t*>(p)[i * stride];
}

// in [F*B+1]: input segment offsets; out [F*K+1]: output segment offsets; seg [F*K]: the input
// segment of each output segment.
struct Offsets {
  std::vector<int64_t> in, out, seg;
  int64_t segments_in() const { return static_cast<int64_t>(in.size()) - 1; }
  int64_t segments_out() const { return static_cast<int64_t>(seg.size()); }
};

Offsets offsets_of(const SelectParams& p) {
  Offsets o;
  const int64_t n_in = p.F * p.B, n_out = p.F * p.K;
  o.in.assign(static_cast<size_t>(n_in + 1), 0);
  o.out.assign(static_cast<size_t>(n_out + 1), 0);
  o.seg.resize(static_cast<size_t>(n_out));
  for (int64_t s = 0; s < n_in; ++s)
    o.in[s + 1] = o.in[s] + int_at(p.lengths, p.lengths_int64, p.lengths_stride, s);
  for (int64_t j = 0; j < n_out; ++j) {
    const int64_t s = j / p.K * p.B + int_at(p.indices, p.indices_int64, p.indices_stride, j % p.K);
    o.seg[j] = s;
    o.out[j + 1] = o.out[j] + (o.in[s + 1] - o.in[s]);
  }
  return o;
}

// dst[i] = 0 + src[i] for one member: the value itself with a -0 (the sign bit alone, in every
// floating format here) turned into +0; on the bits, so that the loop vectorises for every dtype.
// With `nt` (an output of jagged_cpu::kStreamTotal bytes or more, common/cpu_stream.h), 16- and
// 32-bit values (n of at least kStreamMin) go 16 bytes a step with streaming stores once dst is
// 16-byte aligned.
constexpr int64_t kStreamMin = 2048;
using jagged_cpu::kStreamTotal;
template <class T>
void plus_zero_copy(const T* src, T* dst, int64_t n, bool nt) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t,
                                  std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>>;
  static_assert(sizeof(Bits) == sizeof(T));
  constexpr Bits kSign = static_cast<Bits>(Bits{1} << (8 * sizeof(T) - 1));
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4) {
    if (nt && n >= kStreamMin && reinterpret_cast<uintptr_t>(dst) % sizeof(T) == 0) {
      for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % 16 != 0; ++i) {  // head
        Bits v;
        std::memcpy(&v, src + i, sizeof v);
        v = v == kSign ? Bits{0} : v;
        std::memcpy(dst + i, &v, sizeof v);
      }
      constexpr int64_t kStep = 16 / static_cast<int64_t>(sizeof(T));
      const __m128i sign = sizeof(T) == 2 ? _mm_set1_epi16(static_cast<int16_t>(kSign))
                                          : _mm_set1_epi32(static_cast<int32_t>(kSign));
      for (; i + kStep <= n; i += kStep) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        const __m128i eq = sizeof(T) == 2 ? _mm_cmpeq_epi16(v, sign) : _mm_cmpeq_epi32(v, sign);
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_andnot_si128(eq, v));
      }
      jagged_cpu::stream_fence();
    }
  }
#endif
  for (; i < n; ++i) {
    Bits v;
    std::memcpy(&v, src + i, sizeof v);
    v = v == kSign ? Bits{0} : v;
    std::memcpy(dst + i, &v, sizeof v);
  }
}

// bytes of src to dst, and bytes of zeros to dst: streamed (common/cpu_stream.h) when `nt` and
// there are at least kStreamMin bytes, plain otherwise.
void stream_bytes(void* dst, const void* src, int64_t bytes, bool nt) {
  if (nt && bytes >= kStreamMin) {
    jagged_cpu::stream_copy(dst, src, bytes);
    jagged_cpu::stream_fence();
    return;
  }
  std::memcpy(dst, src, static_cast<size_t>(bytes));
}
void stream_zero(void* dst, int64_t bytes, bool nt) {
  if (nt && bytes >= kStreamMin) {
    jagged_cpu::stream_zero(dst, bytes);
    jagged_cpu::stream_fence();
    return;
  }
  std::memset(dst, 0, static_cast<size_t>(bytes));
}

void forward(const SelectParams& p, const Offsets& o, int threads) {
  const int64_t es = dtype_size(p.dtype);
  const int64_t row_bytes = p.D * es;
  for (int64_t j = 0; p.out_lengths != nullptr && j < o.segments_out(); ++j) {
    const int64_t len = o.out[j + 1] - o.out[j];
    if (p.lengths_int64)
      static_cast<int64_t*>(p.out_lengths)[j] = len;
    else
      static_cast<int32_t*>(p.out_lengths)[j] = static_cast<int32_t>(len);
  }
  if (row_bytes == 0) return;
  const auto* src = static_cast<const char*>(p.src);
  auto* dst = static_cast<char*>(p.dst);
  const bool nt = o.out.back() * row_bytes >= kStreamTotal;
  select_balanced_for(
      o.segments_out(), threads, [&](int64_t j) { return o.out[j]; },
      [&](int64_t j) {
        const int64_t len = o.out[j + 1] - o.out[j];
        const char* s = src + o.in[o.seg[j]] * p.src_row_stride * es;
        char* d = dst + o.out[j] * row_bytes;
        if (p.src_row_stride == p.D) {
          stream_bytes(d, s, len * row_bytes, nt);
          return;
        }
        for (int64_t l = 0; l < len; ++l)
          stream_bytes(d + l * row_bytes, s + l * p.src_row_stride * es, row_bytes, nt);
      },
      rows_per_thread(row_bytes));
}

template <class T>
void backward(const SelectParams& p, const Offsets& o, int threads) {
  using Acc = double;  // see the file comment
  const auto load = [](T v) -> Acc {
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
      return v;
    else if constexpr (std::is_same_v<T, Half>)
      return cpu_half_to_float(v);
    else
      return static_cast<Acc>(to_float(v));  // bf16: exact
  };
  const auto store = [](Acc a) -> T {
    if constexpr (std::is_same_v<T, double>)
      return a;
    else if constexpr (std::is_same_v<T, float>)
      return static_cast<float>(a);
    else if constexpr (std::is_same_v<T, Half>)
      return cpu_half_from(a);
    else
      return cpu_bf16_from_double(a);  // common/cpu_half.h
  };
  // Stable counting sort: group[first[s] .. first[s+1]) holds the output segments j of input
  // segment s, ascending.
  const int64_t n_in = o.segments_in(), n_out = o.segments_out();
  std::vector<int64_t> first(static_cast<size_t>(n_in + 1), 0), group(static_cast<size_t>(n_out));
  for (int64_t j = 0; j < n_out; ++j) ++first[o.seg[j] + 1];
  for (int64_t s = 0; s < n_in; ++s) first[s + 1] += first[s];
  {
    std::vector<int64_t> next(first.begin(), first.end() - 1);
    for (int64_t j = 0; j < n_out; ++j) group[next[o.seg[j]]++] = j;
  }
  // Work of input segment b: its rows times the rows read for them (its members, or one pass of
  // zeros); threads take equal shares of the prefix.
  std::vector<int64_t> work(static_cast<size_t>(n_in + 1), 0);
  for (int64_t b = 0; b < n_in; ++b)
    work[b + 1] = work[b] + (o.in[b + 1] - o.in[b]) * std::max<int64_t>(1, first[b + 1] - first[b]);
  const T* g = static_cast<const T*>(p.src);
  T* gv = static_cast<T*>(p.dst);
  const bool nt = o.in.back() * p.D * static_cast<int64_t>(sizeof(T)) >= kStreamTotal;
  select_balanced_for(
      n_in, threads, [&](int64_t b) { return work[b]; },
      [&](int64_t b) {
        // The segment as rows x width elements: one run of L*D when the gradient's rows are dense
        // (stride D), else L rows of D at the gradient's row stride; the output is always dense.
        const int64_t L = o.in[b + 1] - o.in[b];
        const int64_t members = first[b + 1] - first[b];
        T* out = gv + o.in[b] * p.D;
        if (members == 0) {  // never selected: zeros
          stream_zero(out, L * p.D * static_cast<int64_t>(sizeof(T)), nt);
          return;
        }
        const bool dense = p.src_row_stride == p.D;
        const int64_t rows = dense ? 1 : L, width = dense ? L * p.D : p.D;
        const int64_t stride = p.src_row_stride;
        const auto member = [&](int64_t m) { return g + o.out[group[first[b] + m]] * stride; };
        if (members == 1) {  // its value, a -0 written as +0 (the sum 0 + -0)
          const T* src = member(0);
          for (int64_t r = 0; r < rows; ++r)
            plus_zero_copy(src + r * stride, out + r * width, width, nt);
          return;
        }
        // Two or more: s = 0 + g_0 + g_1 + ... in fp64, in ascending member order (the
        // reference's order, so the same sums), over tiles of at most kTile elements of one row so
        // that the partial sums stay in L1; the first two members and the last one are fused into
        // the passes that start and finish a tile.
        constexpr int64_t kTile = 2048;
        Acc acc[kTile];
        T tile[kTile];
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t w0 = 0; w0 < width; w0 += kTile) {
            const int64_t n = std::min(kTile, width - w0);
            const int64_t at = r * stride + w0;
            T* dst = out + r * width + w0;
            const T* a = member(0) + at;
            const T* c = member(1) + at;
            // Streamed, a tile's results go to `tile` (L1) first and then to dst; else to dst.
            T* w = nt ? tile : dst;
            const auto flush = [&] {
              if (nt) stream_bytes(dst, tile, n * static_cast<int64_t>(sizeof(T)), true);
            };
            if (members == 2) {
              if constexpr (sizeof(T) == 2)  // fp32 gives the fp64 sum's bits (select_cpu.h)
                for (int64_t i = 0; i < n; ++i) w[i] = select_pair_sum(a[i], c[i]);
              else
                for (int64_t i = 0; i < n; ++i) w[i] = store((Acc{0} + load(a[i])) + load(c[i]));
              flush();
              continue;
            }
            for (int64_t i = 0; i < n; ++i) acc[i] = (Acc{0} + load(a[i])) + load(c[i]);
            for (int64_t m = 2; m + 1 < members; ++m) {
              const T* x = member(m) + at;
              for (int64_t i = 0; i < n; ++i) acc[i] += load(x[i]);
            }
            const T* z = member(members - 1) + at;
            for (int64_t i = 0; i < n; ++i) w[i] = store(acc[i] + load(z[i]));
            flush();
          }
      },
      rows_per_thread(p.D * static_cast<int64_t>(sizeof(T))));
}
}  // namespace

Status select_run_cpu(const SelectParams& p, const Context& ctx) {
  const Offsets o = offsets_of(p);
  if (!p.backward) {
    forward(p, o, ctx.num_threads);
    return Status::Ok();
  }
  if (!visit_floating(p.dtype, [&](auto t) { backward<decltype(t)>(p, o, ctx.num_threads); }))
    return Status(StatusCode::internal, "select (backward): cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops
