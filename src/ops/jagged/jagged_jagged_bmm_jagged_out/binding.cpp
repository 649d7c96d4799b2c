// jagged_jagged_bmm_jagged_out: the torch hook the generic binding (src/torch/kit.h) cannot
// derive. meta: z [total_z] in SymInts (total_z is an argument, so no data is read). The backward
// is the table's default (jagged_jagged_bmm_jagged_out_bwd).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(jagged_jagged_bmm_jagged_out) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& x = a[0].toTensor();
    const c10::SymInt total_z = a[5].toSymInt();
    TORCH_CHECK(x.dim() == 2, "jagged_jagged_bmm_jagged_out: x must be 2-D [sum N_b, D]; got ",
                x.dim(), "-D");
    TORCH_SYM_CHECK(total_z.sym_ge(0), "jagged_jagged_bmm_jagged_out: total_z must be >= 0");
    return {at::empty_symint({total_z}, x.options())};
  };
  return h;
}
