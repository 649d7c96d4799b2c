// jagged/segment_sum_csr/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/. Raw pointers, sizes.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::segment_sum_csr_ns {

// values [N] and out [S] contiguous; segment i covers values [csr_seg[i]*bs, csr_seg[i+1]*bs).
struct Params {
  const void* values = nullptr;
  void* out = nullptr;
  DType dtype = DType::fp32;
  const void* csr_seg = nullptr;  // [S+1], int32 or int64, element stride csr_stride
  bool csr_int64 = false;
  int64_t csr_stride = 1;
  int64_t S = 0;
  int64_t batch_size = 1;
  int64_t N = 0;
  int device_index = 0;
};

}  // namespace recops::ops::segment_sum_csr_ns
