// jagged/keyed_jagged_index_select_dim1/binding.cpp: the torch hook the generic binding cannot
// derive: the Meta kernel of the helper op _keyed_jagged_index_select_dim1_meta, for symbolic
// sizes (dynamic torch.compile). out and out_weights are [selected_lengths_sum] (required there),
// out_lengths [num_keys * K]; out_weights is [0] without weights (the kit's absent output).
// keyed_jagged_index_select_dim1 itself has no C++ Meta kernel: with selected_lengths_sum omitted
// its size is data dependent, an unbacked SymInt that only Python can create (fake.py, which then
// calls the helper).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(_keyed_jagged_index_select_dim1_meta) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* kOp = "keyed_jagged_index_select_dim1";
    const at::Tensor& values = a[0].toTensor();
    const at::Tensor& lengths = a[1].toTensor();
    const at::Tensor& indices = a[3].toTensor();
    const c10::SymInt batch_size = a[4].toSymInt();
    TORCH_CHECK(values.dim() == 1 && lengths.dim() == 1 && indices.dim() == 1, kOp,
                ": values, lengths and indices must be 1-D");
    TORCH_SYM_CHECK(batch_size.sym_ge(1), kOp, ": batch_size must be >= 1");
    TORCH_CHECK(!a[6].isNone(), kOp,
                ": selected_lengths_sum must be given for tensors without data (Meta, "
                "torch.compile)");
    const c10::SymInt rows = a[6].toSymInt();
    TORCH_SYM_CHECK(rows.sym_ge(0), kOp, ": selected_lengths_sum must be >= 0");
    at::Tensor out_weights = a[5].isNone() ? at::empty({0}, values.options())
                                           : at::empty_symint({rows}, a[5].toTensor().options());
    return {at::empty_symint({rows}, values.options()),
            at::empty_symint({lengths.sym_size(0) / batch_size * indices.sym_size(0)},
                             lengths.options()),
            out_weights};
  };
  return h;
}
