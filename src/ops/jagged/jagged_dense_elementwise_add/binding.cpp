// jagged/jagged_dense_elementwise_add/binding.cpp: the backward, as registered ops (so
// torch.compile traces it; jagged_ops.md §2.3):
//   dx = grad;  dy = jagged_to_padded_dense(grad, seq_offsets, S, 0)   [B, S, *E]
// Only seq_offsets and S = y.size(1) are kept.
#include "torch/kit.h"

RECOPS_TORCH_HOOKS(jagged_dense_elementwise_add) {
  recops::binding::TorchHooks h;
  h.save = [](const recops::binding::Args& a) -> recops::binding::Args {
    const at::Tensor& y = a[2].toTensor();
    return {a[1], y.dim() > 1 ? y.sym_size(1) : c10::SymInt(0)};
  };
  h.backward = [](const recops::binding::Args& saved, const std::vector<at::Tensor>& grads) {
    std::vector<at::Tensor> dy =
        recops::binding::call("jagged_to_padded_dense", {grads[0], saved[0], saved[1], 0.0});
    return std::vector<at::Tensor>{grads[0], dy[0]};
  };
  return h;
}
