// jagged_dense_bmm: the torch hook the generic binding (src/torch/kit.h) cannot derive.
//   meta: z [total_L, N] = [x_values.size(0), y.size(2)] in SymInts, for dynamic shapes (z is
//         like no single argument). The backward is the table's default (jagged_dense_bmm_bwd).
#include <ATen/ops/empty.h>

#include "ops/jagged/common/row_copy_binding.h"

RECOPS_TORCH_HOOKS(jagged_dense_bmm) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& x = a[0].toTensor();
    const at::Tensor& y = a[2].toTensor();
    recops::ops::check_seq_offsets_meta("jagged_dense_bmm", a[1].toTensor());
    TORCH_CHECK(x.dim() == 2 && y.dim() == 3, "jagged_dense_bmm: x_values must be 2-D ",
                "[total_L, K] and y 3-D [B, K, N]; got ", x.dim(), "-D and ", y.dim(), "-D");
    return {at::empty_symint({x.sym_size(0), y.sym_size(2)}, x.options())};
  };
  return h;
}
