// jagged/segment_sum_csr/segment_sum_csr.h: the op's C++ API (torch-free). The Args struct is the
// argument table's struct (the entry's kit::Def binds each member to a schema argument).
//
// segment_sum_csr: out[i] = sum of values[csr_seg[i]*batch_size, csr_seg[i+1]*batch_size)
// values: [N] fp64/fp32/fp16/bf16/int32/int64, contiguous; csr_seg: [S+1] int32/int64; out: [S].
#pragma once

#include <cstdint>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct SegmentSumCsrArgs {
  int64_t batch_size = 1;  // >= 1: values per csr_seg unit
  TensorView csr_seg;      // [S+1] int32 or int64, offsets in units of batch_size
  TensorView values;       // [N], N = csr_seg[S] * batch_size
};

// out: [S], values' dtype.
Status segment_sum_csr_shape(const SegmentSumCsrArgs& a, Shape* out_shape);
Status segment_sum_csr(const SegmentSumCsrArgs& a, const TensorView& out, const Context& ctx = {});

}  // namespace recops
