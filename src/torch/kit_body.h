// torch/kit_body.h: the device-independent body of every kit op (kit.cpp), for the CUDA kernel
// (kit_cuda.cpp) to call after setting the device guard and the stream.
#pragma once

#include <ATen/core/stack.h>

#include "core/kit/op_def.h"
#include "recops/context.h"
#include "torch/kit.h"

namespace recops::binding {

// Pops the op's arguments, allocates its outputs with the shape function, runs it (not for meta),
// pushes the outputs.
void run_boxed(const kit::OpDef& d, torch::jit::Stack* stack, const Context& ctx, bool meta);
// The tensor whose device and options the outputs follow (OpDef::device_arg).
const at::Tensor& device_tensor(const kit::OpDef& d, const Args& in);

}  // namespace recops::binding
