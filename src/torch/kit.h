// torch/kit.h: the PyTorch half of the op kit. Every OpDef (core/kit/op_def.h) becomes a
// torch.ops.recops op with one generic body per dispatch key (kit.cpp, kit_cuda.cpp): the schema
// comes from the argument table, the arguments are converted to the op's Args struct, the outputs
// are allocated from its shape function, and the Autograd kernel saves the inputs and calls the
// backward op. An op folder adds torch code only where the generic body cannot do the job, in a
// binding*.cpp file that registers hooks:
//
//   RECOPS_TORCH_HOOKS(dense_to_jagged) {
//     recops::binding::TorchHooks h;
//     h.meta = ...;  // shapes with symbolic sizes
//     return h;
//   }
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>

#include <functional>
#include <string>
#include <vector>

#include "core/kit/op_def.h"

namespace recops::binding {

using Args = std::vector<c10::IValue>;  // one op's arguments, in schema order

struct TorchHooks {
  // Meta kernel for inputs whose sizes are symbolic (dynamic torch.compile). The generic Meta
  // kernel runs the op's shape function whenever every size is concrete; without this hook a
  // symbolic size is an error naming the op.
  std::function<std::vector<at::Tensor>(const Args& args)> meta;
  // What the Autograd kernel keeps for the backward (default: every argument). Tensors kept here
  // are saved with version checks; the outputs the table names in save_outputs are saved after
  // them (kit::Def::save_outputs).
  std::function<Args(const Args& args)> save;
  // The backward (default: the OpDef's backward op, called with the output gradients, the saved
  // arguments, the saved outputs and the want_d<x> flags). `saved`: what `save` kept, then the
  // save_outputs in the table's order. Returns one gradient per differentiable argument.
  std::function<std::vector<at::Tensor>(const Args& saved, const std::vector<at::Tensor>& grads)>
      backward;
};

// The hooks registered for `op` (an empty TorchHooks when none).
const TorchHooks& hooks(const std::string& op);

struct HooksRegistrar {
  HooksRegistrar(const char* op, TorchHooks (*make)());
};

// An uninitialised tensor of t's (symbolic) sizes and options: the output of a Meta kernel.
inline at::Tensor empty_like_sym(const at::Tensor& t) {
  return at::empty_symint(t.sym_sizes(), t.options());
}

// The argument `name` of op's arguments `a` (looked up in the op's table, so hooks do not count
// positions).
const c10::IValue& arg(const Args& a, const std::string& op, const std::string& name);

// Calls torch.ops.recops.<op> through the dispatcher (boxed) and returns its outputs; hooks use it
// so that torch.compile traces a backward as a graph of recops ops.
std::vector<at::Tensor> call(const std::string& op, Args args);

}  // namespace recops::binding

#define RECOPS_TORCH_HOOKS(op)                                              \
  static recops::binding::TorchHooks recops_torch_hooks_##op();             \
  static const recops::binding::HooksRegistrar recops_torch_hooks_reg_##op( \
      #op, &recops_torch_hooks_##op);                                       \
  static recops::binding::TorchHooks recops_torch_hooks_##op()
