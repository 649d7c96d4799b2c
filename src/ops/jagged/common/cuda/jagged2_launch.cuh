// ops/jagged/common/cuda/jagged2_launch.cuh: what the floating jagged2_* launchers share: the
// dtype switch to CUDA element types and the grid of CTAs over samples.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "recops/dtype.h"
#include "recops/status.h"

namespace recops::ops {

// f(T{}) with T the CUDA type of a floating dtype; an internal error naming `where` otherwise.
template <class F>
Status jagged2_cuda_floating(DType t, const char* where, F&& f) {
  switch (t) {
    case DType::fp64: return f(double{});
    case DType::fp32: return f(float{});
    case DType::fp16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
    default: return Status(StatusCode::internal, std::string(where) + ": unsupported dtype");
  }
}

// One CTA per sample, at most `cap` (the kernels grid-stride over samples beyond it).
inline dim3 jagged2_sample_grid(int64_t B, long long cap) {
  return dim3(static_cast<unsigned>(std::min<int64_t>(B, cap)));
}

}  // namespace recops::ops
