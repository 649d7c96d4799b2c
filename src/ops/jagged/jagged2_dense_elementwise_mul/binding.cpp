// jagged/jagged2_dense_elementwise_mul/binding.cpp: the torch hooks the generic binding cannot
// derive. y is a constant of the op (jagged_ops.md §4 row 17): the save hook refuses a y that
// requires grad (the table marks y differentiable so that such a call reaches it), and the
// backward calls jagged2_dense_elementwise_mul_bwd for dx and returns no gradient for y.
#include "torch/kit.h"

RECOPS_TORCH_HOOKS(jagged2_dense_elementwise_mul) {
  recops::binding::TorchHooks h;
  h.save = [](const recops::binding::Args& a) -> recops::binding::Args {
    TORCH_CHECK(!a[1].toTensor().requires_grad(),
                "recops.jagged2_dense_elementwise_mul: y requires grad, but y is a constant of the "
                "op (a mask shared by the batch) and gets no gradient; pass y.detach()");
    return a;
  };
  h.backward = [](const recops::binding::Args& saved, const std::vector<at::Tensor>& grads) {
    recops::binding::Args args = {grads[0]};
    for (const auto& v : saved) args.push_back(v);
    const at::Tensor dx = recops::binding::call("jagged2_dense_elementwise_mul_bwd", args)[0];
    return std::vector<at::Tensor>{dx, at::Tensor()};
  };
  return h;
}
