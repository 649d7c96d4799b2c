// ops/jagged/common/select_cpu.cpp: the CPU path of the segment-select ops (select_params.h).
// Forward: the offsets of the input and output segments (host vectors), then threads copy whole
// output segments, balanced by rows (select_cpu.h); a segment of dense rows is one memcpy.
// Backward: a stable counting sort groups the output segments of each input segment in ascending
// order; threads take input segments balanced by rows and sum each row's group in that order in
// fp64 for every dtype (the gradients of repeated indices may cancel; fp32 sums missed the single
// standard there): deterministic, no atomics.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/jagged/common/cpu_half.h"
#include "ops/jagged/common/select_cpu.h"
#include "ops/jagged/common/select_params.h"

namespace recops::ops {
namespace {
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
  select_balanced_for(
      o.segments_out(), threads, [&](int64_t j) { return o.out[j]; },
      [&](int64_t j) {
        const int64_t len = o.out[j + 1] - o.out[j];
        const char* s = src + o.in[o.seg[j]] * p.src_row_stride * es;
        char* d = dst + o.out[j] * row_bytes;
        if (p.src_row_stride == p.D) {
          std::memcpy(d, s, static_cast<size_t>(len * row_bytes));
          return;
        }
        for (int64_t l = 0; l < len; ++l)
          std::memcpy(d + l * row_bytes, s + l * p.src_row_stride * es,
                      static_cast<size_t>(row_bytes));
      });
}

template <class T>
void backward(const SelectParams& p, const Offsets& o, int threads) {
  using Acc = double;  // see the file comment
  const auto load = [](T v) -> Acc {
    if constexpr (std::is_same_v<T, double>)
      return v;
    else if constexpr (std::is_same_v<T, Half>)
      return cpu_half_to_float(v);
    else
      return to_double(to_float(v));
  };
  const auto store = [](Acc a) -> T {
    if constexpr (std::is_same_v<T, double>)
      return a;
    else if constexpr (std::is_same_v<T, float>)
      return static_cast<float>(a);
    else if constexpr (std::is_same_v<T, Half>)
      return cpu_half_from(a);
    else
      return select_bf16_from_double(a);
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
  const T* g = static_cast<const T*>(p.src);
  T* gv = static_cast<T*>(p.dst);
  select_balanced_for(
      n_in, threads, [&](int64_t b) { return o.in[b]; },
      [&](int64_t b) {
        // The segment's L rows summed as one block: acc[l*D + d] over its group in ascending
        // order; dense rows (stride D) are one run of L*D elements per group member.
        const int64_t L = o.in[b + 1] - o.in[b];
        T* out = gv + o.in[b] * p.D;
        if (first[b + 1] == first[b]) {  // no member: zeros
          std::fill(out, out + L * p.D, store(Acc{0}));
          return;
        }
        if (first[b + 1] - first[b] == 1) {  // one member: its value (a -0 becomes 0 + -0 = +0)
          const T* src = g + o.out[group[first[b]]] * p.src_row_stride;
          for (int64_t l = 0; l < L; ++l)
            for (int64_t d = 0; d < p.D; ++d) {
              const T x = src[l * p.src_row_stride + d];
              out[l * p.D + d] = load(x) == Acc{0} ? store(Acc{0}) : x;
            }
          return;
        }
        const bool dense = p.src_row_stride == p.D;
        const int64_t rows = dense ? 1 : L, width = dense ? L * p.D : p.D;
        thread_local std::vector<Acc> acc;  // reused across segments
        acc.assign(static_cast<size_t>(L * p.D), Acc{0});
        for (int64_t j = first[b]; j < first[b + 1]; ++j) {
          const T* src = g + o.out[group[j]] * p.src_row_stride;
          for (int64_t r = 0; r < rows; ++r) {
            const T* row = src + r * p.src_row_stride;
            Acc* a = acc.data() + r * width;
            for (int64_t d = 0; d < width; ++d) a[d] += load(row[d]);
          }
        }
        for (int64_t i = 0; i < L * p.D; ++i) out[i] = store(acc[i]);
      });
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
