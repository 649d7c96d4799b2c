// training/inplace_rope/binding.cpp: the torch hooks the generic binding (src/torch/kit.h) cannot
// derive. The autograd keeps cos, sin and inverse only (training_ops.md §3.9 "Saves"): x is
// overwritten by the call, and the backward does not need it. The backward is the op
// inplace_rope_bwd (dy rotated the other way, into a new tensor, so that a dy autograd still
// needs elsewhere is never overwritten); cos and sin get no gradient.
#include "torch/kit.h"

namespace {
constexpr const char* kInplaceRope = "inplace_rope_";
}  // namespace

RECOPS_TORCH_HOOKS(inplace_rope_) {
  recops::binding::TorchHooks h;
  h.save = [](const recops::binding::Args& a) {
    recops::binding::Args keep = a;
    keep.at(0) = c10::IValue();  // x, the table's argument 0
    return keep;
  };
  h.backward = [](const recops::binding::Args& saved,
                  const std::vector<at::Tensor>& grads) -> std::vector<at::Tensor> {
    if (grads.empty() || !grads[0].defined()) return {at::Tensor()};
    return recops::binding::call("inplace_rope_bwd",
                                 {grads[0], recops::binding::arg(saved, kInplaceRope, "cos"),
                                  recops::binding::arg(saved, kInplaceRope, "sin"),
                                  recops::binding::arg(saved, kInplaceRope, "inverse")});
  };
  return h;
}
