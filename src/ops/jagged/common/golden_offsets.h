// ops/jagged/common/golden_offsets.h: what the jagged goldens (reference.cpp files) share with each
// other, never with the CPU or CUDA code they judge.
#pragma once

#include <cstdint>

namespace recops::ops {

// seq_offsets[i] of an int32 or int64 offsets tensor with element stride `stride`, as read.
inline int64_t golden_offset(const void* offsets, bool int64, int64_t stride, int64_t i) {
  const int64_t k = i * stride;
  return int64 ? static_cast<const int64_t*>(offsets)[k] : static_cast<const int32_t*>(offsets)[k];
}

}  // namespace recops::ops
