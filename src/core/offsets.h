// core/offsets.h: checks for seq_offsets shared by every jagged op (jagged_ops.md §1.2).
#pragma once

#include <cstdint>
#include <string_view>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::core {

// Host-side metadata rules: 1-D, int32 or int64, at least one element.
Status check_offsets_meta(std::string_view op, std::string_view arg, const TensorView& off);

// Contents: offsets[0] = 0, non-decreasing, offsets[B] = expected_last (skipped when < 0).
// `host` points at host memory holding the offsets with element stride `stride`.
Status check_offsets_contents(std::string_view op, std::string_view arg, const void* host,
                              DType dtype, int64_t count, int64_t stride, int64_t expected_last,
                              std::string_view last_rule);

// Full content validation for offsets on any device: always on the CPU; on CUDA when
// validate_enabled() and the stream is not capturing (one device-to-host copy and a sync).
Status validate_offsets(std::string_view op, std::string_view arg, const TensorView& off,
                        int64_t expected_last, std::string_view last_rule, const Context& ctx);

// offsets[i] of a CPU tensor as int64.
inline int64_t offset_at(const TensorView& off, int64_t i) {
  const int64_t k = i * off.strides[0];
  return off.dtype == DType::int64 ? static_cast<const int64_t*>(off.data)[k]
                                   : static_cast<const int32_t*>(off.data)[k];
}

// Reads offsets[i] from a tensor on any device (a device-to-host copy for CUDA).
Status read_offset(const TensorView& off, int64_t i, int64_t* value, const Context& ctx);

// Same-device rule between two tensors.
Status check_same_device(std::string_view op, std::string_view a_name, const TensorView& a,
                         std::string_view b_name, const TensorView& b);

}  // namespace recops::core
