// jagged/segment_sum_csr/binding.cpp: the torch hook the generic binding cannot derive: the Meta
// kernel for symbolic sizes (dynamic torch.compile): out is [csr_seg.size(0) - 1] of values'
// dtype.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(segment_sum_csr) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& csr_seg = a[1].toTensor();
    const at::Tensor& values = a[2].toTensor();
    TORCH_CHECK(csr_seg.dim() == 1, "segment_sum_csr: csr_seg must be 1-D [S+1]");
    TORCH_CHECK(values.dim() == 1, "segment_sum_csr: values must be 1-D and contiguous [N]");
    TORCH_SYM_CHECK(csr_seg.sym_size(0).sym_ge(1),
                    "segment_sum_csr: csr_seg must have at least one element");
    return {at::empty_symint({csr_seg.sym_size(0) - 1}, values.options())};
  };
  return h;
}
