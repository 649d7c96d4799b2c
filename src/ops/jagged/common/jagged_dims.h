// ops/jagged/common/jagged_dims.h: the geometry the jagged <-> dense params share (JdEwParams in
// jagged_dense_ew.h, RowCopyParams in row_copy.h): a jagged tensor (total_L, D) laid out by
// seq_offsets beside a dense one (B, S, D). Data only; each params struct adds its pointers and
// strides.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops {

struct JaggedDims {
  const void* seq_offsets = nullptr;  // [B+1] int32 or int64, element stride offsets_stride
  DType dtype = DType::fp32;          // of the floating tensors (row copy: of src and dst)
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  int64_t B = 0;
  int64_t S = 0;  // dense rows per batch
  int64_t D = 1;  // elements per row
  int64_t total_L = 0;
  int device_index = 0;
};

}  // namespace recops::ops
