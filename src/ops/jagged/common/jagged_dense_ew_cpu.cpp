// ops/jagged/common/jagged_dense_ew_cpu.cpp: cpu_generic of the jagged-dense elementwise ops.
// Work items are output rows (each costs D elements, so equal row ranges are equal element counts
// and skewed lengths balance by construction), about 64 KiB of output per chunk so that small
// problems stay on one thread. Jagged rows: each chunk finds the sequence of its first row by
// binary search over the offsets, then walks forward. Dense rows (mul_bwd's dy): (b, l) = (r / S,
// r % S). The inner loop over D is a plain loop the compiler vectorises; 16-bit types compute in
// fp32 (one rounding, so the result equals the fp64 golden's), fp64 in fp64.
#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "core/scalar.h"
#include "ops/jagged/common/cpu_half.h"
#include "ops/jagged/common/jagged_dense_ew.h"

namespace recops::ops {
namespace {

constexpr int64_t kGrainBytes = 64 * 1024;

template <class T>
struct Num;  // the arithmetic type of T and the conversions
template <>
struct Num<BFloat16> {
  using Acc = float;
  static float in(BFloat16 v) { return to_float(v); }
  static BFloat16 out(float v) { return cpu_bf16_from_float(v); }  // common/cpu_half.h
};
// fp16 through common/cpu_half.h (one rounding, as half_from_double).
template <>
struct Num<Half> {
  using Acc = float;
  static float in(Half v) { return cpu_half_to_float(v); }
  static Half out(float v) { return cpu_half_from(v); }
};
template <>
struct Num<float> {
  using Acc = float;
  static float in(float v) { return v; }
  static float out(float v) { return v; }
};
template <>
struct Num<double> {
  using Acc = double;
  static double in(double v) { return v; }
  static double out(double v) { return v; }
};

template <class T>
void add_row(const T* a, const T* y, T* out, int64_t D) {
  using N = Num<T>;
  for (int64_t d = 0; d < D; ++d) out[d] = N::out(N::in(a[d]) + N::in(y[d]));
}
template <class T>
void mul_row(const T* a, const T* y, T* out, int64_t D) {
  using N = Num<T>;
  for (int64_t d = 0; d < D; ++d) out[d] = N::out(N::in(a[d]) * N::in(y[d]));
}

// Jagged rows [begin, end): out (add, mul) or dx (mul_bwd).
template <class T>
void jagged_rows(const JdEwParams& p, int64_t begin, int64_t end) {
  const T* a = static_cast<const T*>(p.a);
  const T* y = static_cast<const T*>(p.y);
  T* out = static_cast<T*>(p.out);
  auto offset = [&](int64_t i) {
    return core::clamp_offset(
        core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i), p.total_L);
  };
  const size_t row_bytes = static_cast<size_t>(p.D) * sizeof(T);
  // Last b with offset(b) <= begin (B >= 1 here: total_L > 0 needs valid offsets with B >= 1,
  // and with corrupted ones every row still lands on some b in [0, B-1] or is a pass-through).
  int64_t b = -1, seq_start = 0, seq_end = 0;
  if (p.B > 0) {
    int64_t lo = 0, hi = p.B - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (offset(mid) <= begin)
        lo = mid;
      else
        hi = mid - 1;
    }
    b = lo;
    seq_start = offset(b);
    seq_end = offset(b + 1);
  }
  for (int64_t r = begin; r < end; ++r) {
    while (b >= 0 && r >= seq_end && b + 1 < p.B) {  // the next non-empty sequence
      ++b;
      seq_start = offset(b);
      seq_end = offset(b + 1);
    }
    const T* ar = a + r * p.a_row_stride;
    T* o = out + r * p.D;
    const int64_t l = r - seq_start;
    const bool in_seq = b >= 0 && r >= seq_start && r < seq_end;
    if (in_seq && l < p.S) {
      const T* yr = y + b * p.y_batch_stride + l * p.y_row_stride;
      if (p.mode == JdEwMode::add)
        add_row(ar, yr, o, p.D);
      else
        mul_row(ar, yr, o, p.D);
    } else if (p.mode == JdEwMode::add) {
      std::memcpy(o, ar, row_bytes);  // past S (or outside every sequence): x passes through
    } else {
      std::memset(o, 0, row_bytes);
    }
  }
}

// Dense rows [begin, end) of mul_bwd's dy [B, S, D].
template <class T>
void dy_rows(const JdEwParams& p, int64_t begin, int64_t end) {
  const T* g = static_cast<const T*>(p.a);
  const T* x = static_cast<const T*>(p.x);
  T* dy = static_cast<T*>(p.dy);
  auto offset = [&](int64_t i) {
    return core::clamp_offset(
        core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i), p.total_L);
  };
  int64_t b = begin / p.S, l = begin % p.S;
  int64_t start = offset(b), length = std::max<int64_t>(0, offset(b + 1) - start);
  for (int64_t r = begin; r < end; ++r) {
    T* o = dy + r * p.D;
    if (l < length)
      mul_row(g + (start + l) * p.a_row_stride, x + (start + l) * p.x_row_stride, o, p.D);
    else
      std::memset(o, 0, static_cast<size_t>(p.D) * sizeof(T));
    if (++l == p.S && r + 1 < end) {
      l = 0;
      ++b;
      start = offset(b);
      length = std::max<int64_t>(0, offset(b + 1) - start);
    }
  }
}

template <class T>
void run(const JdEwParams& p, int threads) {
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / (p.D * static_cast<int64_t>(sizeof(T))));
  core::parallel_for(p.total_L, grain, threads,
                     [&](int64_t begin, int64_t end) { jagged_rows<T>(p, begin, end); });
  if (p.mode == JdEwMode::mul_bwd)
    core::parallel_for(p.B * p.S, grain, threads,
                       [&](int64_t begin, int64_t end) { dy_rows<T>(p, begin, end); });
}

}  // namespace

Status jd_ew_cpu(const JdEwParams& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp64: run<double>(p, ctx.num_threads); break;
    case DType::fp32: run<float>(p, ctx.num_threads); break;
    case DType::fp16: run<Half>(p, ctx.num_threads); break;
    case DType::bf16: run<BFloat16>(p, ctx.num_threads); break;
    default:
      return Status(StatusCode::internal, "jagged_dense_elementwise: cpu_generic got a bad dtype");
  }
  return Status::Ok();
}

}  // namespace recops::ops
