// jagged/jagged_softmax/binding.cpp: the torch hook the generic binding (src/torch/kit.h) cannot
// derive: the backward op takes y, the forward's output, which the Autograd kernel saves after the
// arguments (the table's save_outputs: values, seq_offsets, max_seq_len, then out), as torch's
// softmax keeps its result; the backward calls jagged_softmax_bwd(grad, y, seq_offsets,
// max_seq_len) with no second forward. It is a registered op, so torch.compile traces the
// backward.
#include "torch/kit.h"

RECOPS_TORCH_HOOKS(jagged_softmax) {
  recops::binding::TorchHooks h;
  h.backward = [](const recops::binding::Args& saved, const std::vector<at::Tensor>& grads) {
    return recops::binding::call("jagged_softmax_bwd", {grads[0], saved[3], saved[1], saved[2]});
  };
  return h;
}
