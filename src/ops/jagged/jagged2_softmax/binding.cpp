// jagged/jagged2_softmax/binding.cpp: the torch hook the generic binding cannot derive: the
// backward op takes y, the forward's output, which the save hook cannot see (it receives the
// arguments only). The backward therefore recomputes y with the forward op from the saved
// arguments (x, x_offsets, max_seq_len, transpose: the default save), then calls
// jagged2_softmax_bwd(grad, y, x_offsets, max_seq_len, transpose); both are registered ops, so
// torch.compile traces the backward.
#include "torch/kit.h"

RECOPS_TORCH_HOOKS(jagged2_softmax) {
  recops::binding::TorchHooks h;
  h.backward = [](const recops::binding::Args& saved, const std::vector<at::Tensor>& grads) {
    const at::Tensor y = recops::binding::call("jagged2_softmax", saved)[0];
    return recops::binding::call("jagged2_softmax_bwd",
                                 {grads[0], y, saved[1], saved[2], saved[3]});
  };
  return h;
}
