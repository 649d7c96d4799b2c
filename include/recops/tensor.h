// recops/tensor.h: an owning tensor for the CLI and the tests (contiguous, CPU or CUDA memory).
// The library's ops never allocate; the binding uses torch's allocator instead of this.
#pragma once

#include <memory>

#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

class Tensor {
 public:
  Tensor() = default;
  // Throws recops::Error when the memory cannot be had (e.g. CUDA without a CUDA build).
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
