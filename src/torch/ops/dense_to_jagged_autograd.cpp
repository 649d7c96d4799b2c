// dense_to_jagged, Autograd kernel (jagged_ops.md §2.2):
//   grad_dense = jagged_to_padded_dense(grad, seq_offsets, S, 0)   [B, S, *E]
// Positions l >= L_b of grad_dense are 0. seq_offsets and total_L get no gradient; double
// backward raises.
#include <torch/autograd.h>
#include <torch/library.h>

#include "torch/ops/calls.h"

namespace recops::binding {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class DenseToJagged : public torch::autograd::Function<DenseToJagged> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& dense,
                            const at::Tensor& seq_offsets,
                            const std::optional<c10::SymInt>& total_L) {
    ctx->save_for_backward({seq_offsets});
    // dense of rank < 2 is refused by the op itself, with its own message.
    ctx->saved_data["S"] = dense.dim() >= 2 ? dense.sym_size(1) : c10::SymInt(0);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_dense_to_jagged(dense, seq_offsets, total_L);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // grad: [total_L, *E]
    TORCH_CHECK(!(at::GradMode::is_enabled() && grads[0].requires_grad()),
                "dense_to_jagged: double backward is not supported");
    const at::Tensor seq_offsets = ctx->get_saved_variables()[0];
    const c10::SymInt S = ctx->saved_data["S"].toSymInt();
    at::Tensor grad_dense = call_jagged_to_padded_dense(grads[0], seq_offsets, S, 0.0);
    return {grad_dense, at::Tensor(), at::Tensor()};
  }
};

at::Tensor dense_to_jagged_autograd(const at::Tensor& dense, const at::Tensor& seq_offsets,
                                    std::optional<c10::SymInt> total_L) {
  return DenseToJagged::apply(dense, seq_offsets, total_L);
}
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Autograd, m) {
  m.impl("dense_to_jagged", TORCH_FN(recops::binding::dense_to_jagged_autograd));
}
