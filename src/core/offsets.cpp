#include "core/offsets.h"

#include <cstring>
#include <vector>

#include "core/cuda/runtime.h"

namespace recops::core {

Status check_offsets_meta(std::string_view op, std::string_view arg, const TensorView& off) {
  RECOPS_CHECK(off.ndim == 1, op, ": ", arg, " must be 1-D [B+1], got ", off.ndim, "-D ",
               describe(off));
  RECOPS_CHECK(off.dtype == DType::int32 || off.dtype == DType::int64, op, ": ", arg,
               " must be int32 or int64, got ", dtype_name(off.dtype));
  RECOPS_CHECK(off.sizes[0] >= 1, op, ": ", arg,
               " must have at least one element (B+1 >= 1; B = 0 is seq_offsets=[0])");
  return Status::Ok();
}

Status check_offsets_contents(std::string_view op, std::string_view arg, const void* host,
                              DType dtype, int64_t count, int64_t stride, int64_t expected_last,
                              std::string_view last_rule) {
  auto at = [&](int64_t i) -> int64_t {
    return dtype == DType::int64 ? static_cast<const int64_t*>(host)[i * stride]
                                 : static_cast<const int32_t*>(host)[i * stride];
  };
  const int64_t first = at(0);
  RECOPS_CHECK(first == 0, op, ": ", arg, "[0]=", first, "; offsets must start at 0");
  for (int64_t i = 1; i < count; ++i) {
    const int64_t a = at(i - 1), b = at(i);
    RECOPS_CHECK(b >= a, op, ": ", arg, "[", i, "]=", b, " < ", arg, "[", i - 1, "]=", a,
                 "; offsets must be non-decreasing");
  }
  if (expected_last >= 0) {
    const int64_t last = at(count - 1);
    RECOPS_CHECK(last == expected_last, op, ": ", arg, "[", count - 1, "]=", last, " but ",
                 last_rule, " is ", expected_last, "; the last offset must equal it");
  }
  return Status::Ok();
}

Status validate_offsets(std::string_view op, std::string_view arg, const TensorView& off,
                        int64_t expected_last, std::string_view last_rule, const Context& ctx) {
  const int64_t n = off.sizes[0];
  if (off.device.is_cpu())
    return check_offsets_contents(op, arg, off.data, off.dtype, n, off.strides[0], expected_last,
                                  last_rule);
  if (!validate_enabled() || cuda::stream_capturing(ctx.stream)) return Status::Ok();
  std::vector<int64_t> host(static_cast<size_t>(n));
  RECOPS_RETURN_IF_ERROR(cuda::copy_strided_to_host(host.data(), off.data, dtype_size(off.dtype), n,
                                                    off.strides[0], off.device.index, ctx.stream));
  // copy_strided_to_host packs elements at their own size; reinterpret accordingly.
  return check_offsets_contents(op, arg, host.data(), off.dtype, n, 1, expected_last, last_rule);
}

Status read_offset(const TensorView& off, int64_t i, int64_t* value, const Context& ctx) {
  if (off.device.is_cpu()) {
    *value = offset_at(off, i);
    return Status::Ok();
  }
  int64_t v = 0;
  const char* src = static_cast<const char*>(off.data) + i * off.strides[0] * dtype_size(off.dtype);
  RECOPS_RETURN_IF_ERROR(cuda::copy_strided_to_host(&v, src, dtype_size(off.dtype), 1, 1,
                                                    off.device.index, ctx.stream));
  int32_t v32;
  std::memcpy(&v32, &v, sizeof v32);  // an int32 offset landed in the low 4 bytes
  *value = off.dtype == DType::int64 ? v : static_cast<int64_t>(v32);
  return Status::Ok();
}

Status check_same_device(std::string_view op, std::string_view a_name, const TensorView& a,
                         std::string_view b_name, const TensorView& b) {
  RECOPS_CHECK(a.device == b.device, op, ": ", a_name, " is on ", a.device.str(), " but ", b_name,
               " is on ", b.device.str(), "; all tensors must be on one device");
  return Status::Ok();
}

}  // namespace recops::core
