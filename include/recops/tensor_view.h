// recops/tensor_view.h: a non-owning view of a strided tensor (pointer, dtype, device, sizes,
// strides in elements). Every op entry takes views; nothing below the binding knows torch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "recops/device.h"
#include "recops/dtype.h"

namespace recops {

inline constexpr int kMaxDims = 8;

using Shape = std::vector<int64_t>;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::fp32;
  Device device{};
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // in elements, may be 0 or negative only where an op allows

  TensorView() = default;
  // Contiguous view of `shape`.
  TensorView(void* p, DType t, Device d, const Shape& shape) : data(p), dtype(t), device(d) {
    ndim = static_cast<int>(shape.size());
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      sizes[i] = shape[static_cast<size_t>(i)];
      strides[i] = s;
      // Saturates: an empty tensor may pair a 0 extent with huge ones (e.g. [0, 2^62, 7]); its
      // strides are never used to address memory.
      s = mul_sat(s, sizes[i] > 0 ? sizes[i] : 1);
    }
  }
  TensorView(void* p, DType t, Device d, const Shape& shape, const Shape& stride)
      : TensorView(p, t, d, shape) {
    for (int i = 0; i < ndim; ++i) strides[i] = stride[static_cast<size_t>(i)];
  }

  int64_t size(int i) const { return sizes[i < 0 ? i + ndim : i]; }
  int64_t stride(int i) const { return strides[i < 0 ? i + ndim : i]; }
  // Products saturate at INT64_MAX instead of overflowing; a 0 extent anywhere gives 0.
  static int64_t mul_sat(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
  }
  int64_t numel() const { return inner_numel(0); }
  int64_t itemsize() const { return dtype_size(dtype); }
  Shape shape() const { return Shape(sizes, sizes + ndim); }
  // Product of sizes[from:], 1 for an empty range.
  int64_t inner_numel(int from) const {
    for (int i = from; i < ndim; ++i)
      if (sizes[i] == 0) return 0;
    int64_t n = 1;
    for (int i = from; i < ndim; ++i) n = mul_sat(n, sizes[i]);
    return n;
  }
  // True when dims [from, ndim) are laid out densely (row-major, last stride 1); size-1 and
  // empty dims may have any stride.
  bool inner_contiguous(int from) const {
    if (inner_numel(from) == 0) return true;  // no elements: any strides will do
    int64_t expect = 1;
    for (int i = ndim - 1; i >= from; --i) {
      if (sizes[i] != 1 && sizes[i] != 0 && strides[i] != expect) return false;
      // Saturates: the dims after `from` of a tensor empty before it may multiply past int64
      // (y [0, 2^63-4, 4] with from = 1; found by fuzz_jagged_entries).
      expect = mul_sat(expect, sizes[i]);
    }
    return true;
  }
  bool is_contiguous() const { return inner_contiguous(0); }
  template <class T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

std::string shape_str(const Shape& s);
std::string describe(const TensorView& t);  // e.g. "bf16[37, 199] on cpu"

}  // namespace recops
