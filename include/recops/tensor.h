// recops/tensor.h: an owning tensor for the CLI and the tests (contiguous, CPU or CUDA memory).
// The library's ops never allocate; the binding uses torch's allocator instead of this.
#pragma once

#include <memory>
#include <string>

#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

// The byte count of a dense tensor of `shape` and `dtype` in *bytes, or an invalid_argument error
// that names `who` (e.g. "jagged_to_padded_dense: output out") and the shape when a size is
// negative, there are more than kMaxDims dims, or the count does not fit in int64.
Status checked_nbytes(const std::string& who, const Shape& shape, DType dtype, int64_t* bytes);

class Tensor {
 public:
  Tensor() = default;
  // Throws recops::Error when the memory cannot be had (a shape whose byte count overflows, no
  // host memory, CUDA without a CUDA build).
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }  // NOLINT: views are what ops take
  void* data() const { return view_.data; }
  DType dtype() const { return view_.dtype; }
  Device device() const { return view_.device; }
  int64_t numel() const { return view_.numel(); }
  int64_t nbytes() const { return numel() * dtype_size(view_.dtype); }
  Shape shape() const { return view_.shape(); }
  bool defined() const { return static_cast<bool>(buf_); }

  // Copies (contiguous bytes) between this tensor and another of the same size, any devices.
  void copy_from(const Tensor& src);
  Tensor to(Device d) const;

 private:
  std::shared_ptr<void> buf_;
  TensorView view_;
};

}  // namespace recops
