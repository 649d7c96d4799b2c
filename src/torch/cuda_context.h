// torch/cuda_context.h: the CUDA half of convert.h, included only by the ops/*_cuda.cpp files
// (compiled when the core has CUDA). The device guard and the current stream come from torch.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "recops/context.h"

namespace recops::binding {

// The Context of a call on `t`'s device: torch's current stream there, so recops work orders with
// the caller's torch work without any synchronisation.
inline Context cuda_context(const at::Tensor& t) {
  Context ctx;
  ctx.stream = static_cast<void*>(c10::cuda::getCurrentCUDAStream(t.get_device()).stream());
  return ctx;
}

}  // namespace recops::binding
