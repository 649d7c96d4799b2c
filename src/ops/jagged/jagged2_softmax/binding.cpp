// jagged/jagged2_softmax/binding.cpp: the torch hook the generic binding cannot derive: the
// backward op takes y, the forward's output, which the Autograd kernel saves after the arguments
// (the table's save_outputs: x, x_offsets, max_seq_len, transpose, then out), so the backward
// calls jagged2_softmax_bwd(grad, y, x_offsets, max_seq_len, transpose) with no second forward.
// It is a registered op, so torch.compile traces the backward.
#include "torch/kit.h"

RECOPS_TORCH_HOOKS(jagged2_softmax) {
  recops::binding::TorchHooks h;
  h.backward = [](const recops::binding::Args& saved, const std::vector<at::Tensor>& grads) {
    return recops::binding::call("jagged2_softmax_bwd",
                                 {grads[0], saved[4], saved[1], saved[2], saved[3]});
  };
  return h;
}
