// tests/fuzz/fuzz_util.h: what the op fuzzers share: tensors built from the fuzz input, and
// sizes and scalars that are mostly plausible and sometimes extreme (up to 2^62, negative).
// Every view handed to an op describes memory that is really there: a view with a zero extent
// may carry huge other extents (no element is reachable), any other view is allocated to cover
// its largest offset (contiguous, padded or zero strides).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

#include "recops/recops.h"

namespace recops_fuzz {

using recops::DType;
using recops::Shape;
using recops::Tensor;
using recops::TensorView;

constexpr int64_t kMaxElems = int64_t{1} << 16;  // per tensor, keeps runs fast

inline DType any_dtype(FuzzedDataProvider& fdp) {
  return recops::kAllDTypes[fdp.ConsumeIntegralInRange<size_t>(0,
                                                               std::size(recops::kAllDTypes) - 1)];
}

// Usually `usual`, one time in `odds` any dtype.
inline DType dtype_or_any(FuzzedDataProvider& fdp, DType usual, int odds = 8) {
  return fdp.ConsumeIntegralInRange<int>(0, odds - 1) ? usual : any_dtype(fdp);
}

inline DType pick(FuzzedDataProvider& fdp, std::initializer_list<DType> ts) {
  return ts.begin()[fdp.ConsumeIntegralInRange<size_t>(0, ts.size() - 1)];
}

// Product of the extents with 0 counted as 1, saturating at INT64_MAX.
inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) {
    if (x < 0) return INT64_MAX;
    if (__builtin_mul_overflow(n, x > 0 ? x : 1, &n)) return INT64_MAX;
  }
  return n;
}

inline bool has_zero(const Shape& s) {
  for (int64_t x : s)
    if (x == 0) return true;
  return false;
}

// A size argument: mostly in [lo, hi], sometimes an extreme (2^31±, 2^62, INT64_MAX, negative).
inline int64_t size_arg(FuzzedDataProvider& fdp, int64_t lo, int64_t hi) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return fdp.ConsumeIntegral<int64_t>();
    case 1: return int64_t{1} << fdp.ConsumeIntegralInRange<int>(30, 62);
    case 2: return INT64_MAX - fdp.ConsumeIntegralInRange<int64_t>(0, 16);
    case 3: return -fdp.ConsumeIntegralInRange<int64_t>(1, 3);
    case 4: return (int64_t{1} << 32) + fdp.ConsumeIntegralInRange<int64_t>(-2, 130);
    default: return fdp.ConsumeIntegralInRange<int64_t>(lo, hi);
  }
}

// A training op's floating dtype: fp32, fp16, bf16 or fp64, one time in eight any dtype.
inline DType train_dtype(FuzzedDataProvider& fdp) {
  return dtype_or_any(fdp, pick(fdp, {DType::fp32, DType::fp16, DType::bf16, DType::fp64}));
}

// A small extent in [0, hi], one time in twelve a size_arg (maybe extreme: a tensor with it is
// then refused by the arena unless another extent is 0).
inline int64_t extent(FuzzedDataProvider& fdp, int64_t hi) {
  return fdp.ConsumeIntegralInRange<int>(0, 11) ? fdp.ConsumeIntegralInRange<int64_t>(0, hi)
                                                : size_arg(fdp, 0, hi);
}

// A double: mostly `usual`, sometimes any value (NaN, ±inf, denormals, huge).
inline double real_arg(FuzzedDataProvider& fdp, double usual) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return fdp.ConsumeFloatingPoint<double>();
    case 1: return fdp.ConsumeProbability<double>();
    case 2: return -fdp.ConsumeProbability<double>();
    default: return usual;
  }
}

// Owns the allocations behind the views of one fuzz input.
class Arena {
 public:
  explicit Arena(FuzzedDataProvider& fdp) : fdp_(fdp) {}

  // A view of `shape` and `t`, filled from the input. False when it would be too large.
  bool view(const Shape& shape, DType t, TensorView* out) {
    if (shape.size() > static_cast<size_t>(recops::kMaxDims)) return false;
    for (int64_t x : shape)
      if (x < 0) return false;
    if (has_zero(shape)) {  // nothing reachable: huge extents are fine
      *out = TensorView(&dummy_, t, recops::Device::cpu(), shape);
      return true;
    }
    if (numel(shape) > kMaxElems) return false;
    const int nd = static_cast<int>(shape.size());
    Shape stride(shape.size());
    const int mode = fdp_.ConsumeIntegralInRange<int>(0, 9);  // 0: padded, 1: one zero stride
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; --i) {
      stride[static_cast<size_t>(i)] = s;
      const int64_t pad = mode == 0 ? fdp_.ConsumeIntegralInRange<int64_t>(0, 3) : 0;
      s *= shape[static_cast<size_t>(i)] + pad;
    }
    if (mode == 1 && nd > 0) stride[fdp_.ConsumeIntegralInRange<size_t>(0, nd - 1)] = 0;
    int64_t span = 1;  // elements from the first to one past the last reachable
    for (int i = 0; i < nd; ++i) span += (shape[static_cast<size_t>(i)] - 1) * stride[i];
    if (span > 4 * kMaxElems) return false;
    keep_.push_back(Tensor::empty({span}, t));
    Tensor& buf = keep_.back();
    const size_t bytes = static_cast<size_t>(buf.nbytes());
    std::vector<uint8_t> raw = fdp_.ConsumeBytes<uint8_t>(bytes);
    raw.resize(bytes, 0);
    if (bytes) std::memcpy(buf.data(), raw.data(), bytes);
    *out = TensorView(buf.data(), t, recops::Device::cpu(), shape, stride);
    return true;
  }

  // An integer view (int32/int64 usually) whose entries are mostly in [lo, hi].
  bool ints(const Shape& shape, DType t, int64_t lo, int64_t hi, TensorView* out) {
    if (!view(shape, t, out)) return false;
    if (t != DType::int32 && t != DType::int64) return true;
    if (fdp_.ConsumeIntegralInRange<int>(0, 15) == 0) return true;  // raw bytes
    for_each(*out, [&](int64_t off) {
      int64_t v = fdp_.ConsumeIntegralInRange<int>(0, 40) ? fdp_.ConsumeIntegralInRange(lo, hi)
                                                          : fdp_.ConsumeIntegral<int64_t>();
      set_int(*out, off, v);
    });
    return true;
  }

  // Offsets [n+1]: a cumsum of lengths in [0, max_len] starting at 0, sometimes corrupted.
  // *last gets the final value; *longest the largest length.
  bool offsets(int64_t n, DType t, int64_t max_len, TensorView* out, int64_t* last,
               int64_t* longest) {
    max_len = std::min<int64_t>(max_len, int64_t{1} << 20);  // the cumsum cannot overflow
    const int64_t n1 = n < INT64_MAX ? n + 1 : n;  // a fuzzed INT64_MAX stays representable
    Shape shape = {n1};
    if (fdp_.ConsumeIntegralInRange<int>(0, 15) == 0) shape = {1, n1};
    if (!view(shape, t, out)) return false;
    *last = 0;
    *longest = 0;
    if (t != DType::int32 && t != DType::int64) return true;
    int64_t acc = 0;
    int64_t i = 0;
    for_each(*out, [&](int64_t off) {
      if (i++ > 0) {
        const int64_t len = fdp_.ConsumeIntegralInRange<int64_t>(0, max_len);
        acc += len;
        if (len > *longest) *longest = len;
      }
      set_int(*out, off,
              fdp_.ConsumeIntegralInRange<int>(0, 40) ? acc : fdp_.ConsumeIntegral<int64_t>());
    });
    *last = acc;
    return true;
  }

  // A contiguous output of `shape` (or, rarely, a perturbed shape or dtype).
  bool output(Shape shape, DType t, TensorView* out) {
    const int r = fdp_.ConsumeIntegralInRange<int>(0, 15);
    // A perturbed extent stays representable (a fuzzed INT64_MAX + 1 would be the harness's UB).
    if (r == 0 && !shape.empty() && shape.back() < INT64_MAX) shape.back() += 1;
    if (r == 1) shape.push_back(1);
    if (r == 2) t = any_dtype(fdp_);
    return view(shape, t, out);
  }

 private:
  template <class F>
  static void for_each(const TensorView& v, F&& f) {
    int64_t idx[recops::kMaxDims] = {};
    const int64_t n = v.numel();
    for (int64_t e = 0; e < n; ++e) {
      int64_t off = 0;
      for (int i = 0; i < v.ndim; ++i) off += idx[i] * v.strides[i];
      f(off);
      for (int i = v.ndim - 1; i >= 0; --i) {
        if (++idx[i] < v.sizes[i]) break;
        idx[i] = 0;
      }
    }
  }
  static void set_int(const TensorView& v, int64_t off, int64_t x) {
    if (v.dtype == DType::int64)
      static_cast<int64_t*>(v.data)[off] = x;
    else
      static_cast<int32_t*>(v.data)[off] = static_cast<int32_t>(x);
  }

  FuzzedDataProvider& fdp_;
  std::deque<Tensor> keep_;
  alignas(64) unsigned char dummy_[64] = {};
};

// The implementation a call asks for: the default (best available), or one named.
inline std::string impl_arg(FuzzedDataProvider& fdp, std::initializer_list<const char*> ids) {
  if (fdp.ConsumeBool()) return "";
  return ids.begin()[fdp.ConsumeIntegralInRange<size_t>(0, ids.size() - 1)];
}

}  // namespace recops_fuzz
