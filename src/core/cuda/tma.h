// core/cuda/tma.h: host-side TMA tensor maps (Hopper's tensor memory accelerator) for the sm_90a
// kernels. The driver's cuTensorMapEncodeTiled is reached through the runtime's driver entry
// point, so nothing links libcuda directly.
#pragma once

#include <cstdint>

#include "recops/status.h"

namespace recops::core::cuda {

// The 128-byte opaque CUtensorMap, passed to kernels by value as a __grid_constant__ parameter.
struct alignas(64) TensorMap {
  uint64_t opaque[16];
};

// A 3-D map over 2-byte elements (bf16 / fp16) laid out as rows of `heads` heads of `dim`
// contiguous elements: extents (dim, heads, rows), byte strides (head_stride, row_stride) of
// dims 1 and 2, read in boxes of (64, 1, box_rows) into shared memory with the 128-byte swizzle
// (core/cuda/sm90.cuh: sw128). Out-of-range rows read as zeros. Fails with a Status naming
// `what` when the driver refuses (base or strides not 16-byte aligned, extents past 2^32).
Status make_tensor_map_3d_b16(TensorMap* map, const void* base, int64_t dim, int64_t heads,
                              int64_t rows, int64_t head_stride_bytes, int64_t row_stride_bytes,
                              int box_rows, const char* what);

}  // namespace recops::core::cuda
