#include "recops/tensor.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/cuda/runtime.h"

namespace recops {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

std::string describe(const TensorView& t) {
  return std::string(dtype_name(t.dtype)) + shape_str(t.shape()) + " on " + t.device.str();
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  Tensor t;
  for (int64_t s : shape)
    if (s < 0)
      throw Error(Status(StatusCode::invalid_argument,
                         "Tensor::empty: negative size in " + shape_str(shape)));
  if (shape.size() > static_cast<size_t>(kMaxDims))
    throw Error(Status(StatusCode::invalid_argument, "Tensor::empty: more than 8 dims"));
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const size_t bytes = static_cast<size_t>(n * dtype_size(dtype));
  void* p = nullptr;
  if (device.is_cpu()) {
    // 64-byte alignment for vector loads; at least one byte so that empty tensors have a pointer.
    p = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
    if (!p)
      throw Error(Status(StatusCode::out_of_range, "Tensor::empty: out of host memory for " +
                                                       std::to_string(bytes) + " bytes"));
    t.buf_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  } else {
    throw_if_error(core::cuda::malloc_device(&p, bytes, device.index));
    t.buf_ = std::shared_ptr<void>(p, [](void* q) { core::cuda::free_device(q); });
  }
  t.view_ = TensorView(p, dtype, device, shape);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.nbytes() != nbytes())
    throw Error(Status(StatusCode::invalid_argument, "Tensor::copy_from: size mismatch"));
  if (nbytes() == 0) return;
  if (device().is_cpu() && src.device().is_cpu())
    std::memcpy(data(), src.data(), static_cast<size_t>(nbytes()));
  else
    throw_if_error(core::cuda::memcpy_any(data(), src.data(), static_cast<size_t>(nbytes())));
}

Tensor Tensor::to(Device d) const {
  Tensor t = empty(shape(), dtype(), d);
  t.copy_from(*this);
  return t;
}

}  // namespace recops
