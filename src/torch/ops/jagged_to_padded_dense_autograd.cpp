// jagged_to_padded_dense, Autograd kernel (jagged_ops.md §2.1):
//   grad_values = dense_to_jagged(grad, seq_offsets, total_L)   [total_L, *E]
// Rows truncated by max_seq_len get 0. seq_offsets, max_seq_len and padding_value get no
// gradient; double backward raises.
#include <torch/autograd.h>
#include <torch/library.h>

#include "torch/ops/calls.h"

namespace recops::binding {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class JaggedToPaddedDense : public torch::autograd::Function<JaggedToPaddedDense> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& values,
                            const at::Tensor& seq_offsets, const c10::SymInt& max_seq_len,
                            double padding_value) {
    ctx->save_for_backward({seq_offsets});
    // 0-D values are refused by the op itself, with its own message.
    ctx->saved_data["total_L"] = values.dim() >= 1 ? values.sym_size(0) : c10::SymInt(0);
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_jagged_to_padded_dense(values, seq_offsets, max_seq_len, padding_value);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // grad: [B, max_seq_len, *E]
    TORCH_CHECK(!(at::GradMode::is_enabled() && grads[0].requires_grad()),
                "jagged_to_padded_dense: double backward is not supported");
    const at::Tensor seq_offsets = ctx->get_saved_variables()[0];
    const c10::SymInt total_L = ctx->saved_data["total_L"].toSymInt();
    at::Tensor grad_values = call_dense_to_jagged(grads[0], seq_offsets, total_L);
    return {grad_values, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor jagged_to_padded_dense_autograd(const at::Tensor& values, const at::Tensor& seq_offsets,
                                           c10::SymInt max_seq_len, double padding_value) {
  return JaggedToPaddedDense::apply(values, seq_offsets, max_seq_len, padding_value);
}
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Autograd, m) {
  m.impl("jagged_to_padded_dense", TORCH_FN(recops::binding::jagged_to_padded_dense_autograd));
}
