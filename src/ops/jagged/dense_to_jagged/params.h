// dense_to_jagged/params.h: the flat problem description shared by the entry, the reference,
// cpu/ and cuda/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops {

struct DenseToJaggedParams {
  // dense: (B, S, D); dense[b, l, :] starts at dense + b*dense_batch_stride + l*dense_row_stride
  // elements, its D elements dense.
  const void* dense = nullptr;
  // seq_offsets: (B+1,) int32 or int64 with element stride offsets_stride.
  const void* seq_offsets = nullptr;
  // out: (total_L, D) jagged; row r starts at out + r*out_row_stride elements.
  void* out = nullptr;

  DType dtype = DType::fp32;  // bits are moved, only the size matters
  int64_t elem_size = 4;
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;

  int64_t B = 0;
  int64_t S = 0;
  int64_t D = 1;
  int64_t total_L = 0;
  int64_t dense_batch_stride = 0;
  int64_t dense_row_stride = 0;
  int64_t out_row_stride = 0;
  int device_index = 0;
};

}  // namespace recops::ops
