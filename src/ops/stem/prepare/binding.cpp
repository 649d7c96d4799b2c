// stem_prepare: the torch extras the generic binding (src/torch/kit.h) cannot derive.
//   meta:  the shapes in SymInts for dynamic shapes (torch.compile(dynamic=True)); the real
//          kernel checks the rules at run time. max_q_blocks and max_kv_blocks must be >= 0 here:
//          -1 means a host read of the lengths, which tracing cannot do.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(stem_prepare) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    constexpr const char* op = "stem_prepare";
    using recops::binding::arg;
    const int64_t max_q = arg(a, op, "max_q_blocks").toInt();
    const int64_t max_kv = arg(a, op, "max_kv_blocks").toInt();
    TORCH_CHECK_VALUE(max_q >= 0 && max_kv >= 0, "recops.stem_prepare: max_q_blocks=", max_q,
                      " and max_kv_blocks=", max_kv,
                      " must be given (>= 0) under torch.compile / on meta tensors; -1 reads the "
                      "lengths on the host");
    const at::Tensor& q = arg(a, op, "q").toTensor();
    const at::Tensor& k = arg(a, op, "k").toTensor();
    const at::Tensor& cu_seqlens_q = arg(a, op, "cu_seqlens_q").toTensor();
    const int64_t stem_stride = arg(a, op, "stem_stride").toInt();
    const c10::SymInt B = cu_seqlens_q.sym_size(0) - 1;
    const c10::SymInt Nk = k.sym_size(k.dim() - 2), Df = q.sym_size(2) * stem_stride;
    const auto bf = q.options().dtype(at::kBFloat16);
    return {at::empty_symint({B, q.sym_size(1), max_q, Df}, bf),
            at::empty_symint({B, Nk, max_kv, Df}, bf),
            at::empty_symint({B, Nk, max_kv}, q.options().dtype(at::kFloat))};
  };
  return h;
}
