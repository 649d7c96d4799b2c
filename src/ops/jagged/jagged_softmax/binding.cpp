// jagged/jagged_softmax/binding.cpp: the torch hook the generic binding (src/torch/kit.h) cannot
// derive: the backward op takes y, the forward's output, which the Autograd kernel's save hook
// cannot see (it receives the arguments only). The backward therefore recomputes y with the
// forward op from the saved arguments (values, seq_offsets, max_seq_len: the default save), then
// calls jagged_softmax_bwd(grad, y, seq_offsets, max_seq_len). Both are registered ops, so
// torch.compile traces the backward as a graph of recops ops.
#include "torch/kit.h"

RECOPS_TORCH_HOOKS(jagged_softmax) {
  recops::binding::TorchHooks h;
  h.backward = [](const recops::binding::Args& saved, const std::vector<at::Tensor>& grads) {
    const at::Tensor y = recops::binding::call("jagged_softmax", {saved[0], saved[1], saved[2]})[0];
    return recops::binding::call("jagged_softmax_bwd", {grads[0], y, saved[1], saved[2]});
  };
  return h;
}
