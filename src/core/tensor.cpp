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

Status checked_nbytes(const std::string& who, const Shape& shape, DType dtype, int64_t* bytes) {
  const std::string what = who + ": shape " + shape_str(shape);
  if (shape.size() > static_cast<size_t>(kMaxDims))
    return Status(StatusCode::invalid_argument,
                  what + " has more than " + std::to_string(kMaxDims) + " dims");
  int64_t n = dtype_size(dtype);
  bool overflow = false, empty = false;
  for (int64_t s : shape) {
    if (s < 0) return Status(StatusCode::invalid_argument, what + " has a negative size");
    empty = empty || s == 0;
    if (!overflow) overflow = __builtin_mul_overflow(n, s, &n);
  }
  if (empty) n = 0;  // an empty tensor has no bytes, whatever its other extents
  if (overflow && !empty)
    return Status(StatusCode::invalid_argument,
                  what + " of " + std::string(dtype_name(dtype)) + " needs more than 2^63-1 bytes");
  *bytes = n;
  return Status::Ok();
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  Tensor t;
  int64_t nbytes = 0;
  throw_if_error(checked_nbytes("Tensor::empty", shape, dtype, &nbytes));
  const auto bytes = static_cast<size_t>(nbytes);
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
