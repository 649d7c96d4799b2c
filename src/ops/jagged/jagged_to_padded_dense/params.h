// jagged_to_padded_dense/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/. Raw pointers, element strides, sizes; nothing else.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops {

struct JaggedToPaddedDenseParams {
  // values: (total_L, D) jagged by seq_offsets (B+1); row r starts at values + r*values_row_stride
  // elements and its D elements are dense.
  const void* values = nullptr;
  // seq_offsets: (B+1,) int32 or int64, element stride offsets_stride.
  const void* seq_offsets = nullptr;
  // out: (B, max_L, D); out[b, l, :] starts at out + b*out_batch_stride + l*out_row_stride.
  void* out = nullptr;

  DType dtype = DType::fp32;  // of values and out; the ops move bits, so only its size matters
  int64_t elem_size = 4;
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;

  int64_t B = 0;
  int64_t max_L = 0;
  int64_t D = 1;
  int64_t total_L = 0;
  int64_t values_row_stride = 0;
  int64_t out_batch_stride = 0;
  int64_t out_row_stride = 0;

  uint64_t padding_bits = 0;  // padding_value encoded in dtype (low elem_size bytes)
  int device_index = 0;
};

}  // namespace recops::ops
