// jagged_jagged_bmm: the torch hook the generic binding (src/torch/kit.h) cannot derive.
//   meta: z [B, M, N] = [seq_offsets.size(0) - 1, x_values.size(1), y_values.size(1)] in
//         SymInts, for dynamic shapes. The backward is the table's default (jagged_jagged_bmm_bwd).
#include <ATen/ops/empty.h>

#include "ops/jagged/common/row_copy_binding.h"

RECOPS_TORCH_HOOKS(jagged_jagged_bmm) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& x = a[0].toTensor();
    const at::Tensor& y = a[1].toTensor();
    const at::Tensor& seq_offsets = a[2].toTensor();
    recops::ops::check_seq_offsets_meta("jagged_jagged_bmm", seq_offsets);
    TORCH_CHECK(x.dim() == 2 && y.dim() == 2, "jagged_jagged_bmm: x_values and y_values must be ",
                "2-D [total_L, M], [total_L, N]; got ", x.dim(), "-D and ", y.dim(), "-D");
    return {
        at::empty_symint({seq_offsets.sym_size(0) - 1, x.sym_size(1), y.sym_size(1)}, x.options())};
  };
  return h;
}
