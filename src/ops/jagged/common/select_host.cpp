// ops/jagged/common/select_host.cpp: see select_host.h.
#include "ops/jagged/common/select_host.h"

#include <cstdint>
#include <cstring>

#include "core/cuda/runtime.h"
#include "core/offsets.h"

namespace recops::ops {

Status select_read_ints(const TensorView& t, const Context& ctx, std::vector<int64_t>* out,
                        bool* read) {
  const int64_t n = t.sizes[0];
  out->clear();
  *read = false;
  if (t.device.is_cpu()) {
    out->resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) (*out)[static_cast<size_t>(i)] = core::offset_at(t, i);
    *read = true;
    return Status::Ok();
  }
  // Nothing allocated before this: a CUDA call without validation must cost no host time (the
  // vector used to be sized first: 64 MB zeroed per call for a 4M-segment permute, the likely
  // cost of the 45 ms it took on an H100 at e528d76).
  if (!validate_enabled() || core::cuda::stream_capturing(ctx.stream) || n == 0)
    return Status::Ok();
  out->resize(static_cast<size_t>(n));
  std::vector<char> host(static_cast<size_t>(n * dtype_size(t.dtype)));
  RECOPS_RETURN_IF_ERROR(core::cuda::copy_strided_to_host(
      host.data(), t.data, dtype_size(t.dtype), n, t.strides[0], t.device.index, ctx.stream));
  for (int64_t i = 0; i < n; ++i) {
    if (t.dtype == DType::int64) {
      std::memcpy(&(*out)[static_cast<size_t>(i)], host.data() + 8 * i, 8);
    } else {
      int32_t v;
      std::memcpy(&v, host.data() + 4 * i, 4);
      (*out)[static_cast<size_t>(i)] = v;
    }
  }
  *read = true;
  return Status::Ok();
}

Status select_check_lengths(std::string_view op, std::string_view arg,
                            const std::vector<int64_t>& lengths, int64_t* sum) {
  int64_t s = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t v = lengths[i];
    RECOPS_CHECK(v >= 0, op, ": ", arg, "[", i, "]=", v, " is negative; lengths must be >= 0");
    RECOPS_CHECK(s <= INT64_MAX - v, op, ": the sum of ", arg, " overflows int64 at index ", i);
    s += v;
  }
  *sum = s;
  return Status::Ok();
}

Status select_check_indices(std::string_view op, std::string_view arg,
                            const std::vector<int64_t>& indices, int64_t bound,
                            std::string_view bound_rule) {
  for (size_t i = 0; i < indices.size(); ++i)
    RECOPS_CHECK(indices[i] >= 0 && indices[i] < bound, op, ": ", arg, "[", i, "]=", indices[i],
                 " is out of range; indices must be in [0, ", bound_rule, " = ", bound, ")");
  return Status::Ok();
}

bool select_host_readable(const TensorView& t) {
  return t.device.is_cpu() && (t.data != nullptr || t.numel() == 0);
}

Status select_check_int_1d(std::string_view op, std::string_view arg, const TensorView& t) {
  RECOPS_CHECK(t.ndim == 1, op, ": ", arg, " must be 1-D, got ", t.ndim, "-D ", describe(t));
  RECOPS_CHECK(t.dtype == DType::int32 || t.dtype == DType::int64, op, ": ", arg,
               " must be int32 or int64, got ", dtype_name(t.dtype));
  return Status::Ok();
}

}  // namespace recops::ops
