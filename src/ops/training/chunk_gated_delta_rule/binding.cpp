// training/chunk_gated_delta_rule/binding.cpp: the torch hook the generic binding (src/torch/kit.h)
// cannot derive: the Meta kernel for symbolic sizes (o like v, final_state [N, HV, K, V] fp32 or
// [0]). With concrete sizes the generic Meta kernel runs the shape function (every rule checked).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(chunk_gated_delta_rule) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    using recops::binding::arg;
    constexpr const char* op = "chunk_gated_delta_rule";
    const at::Tensor& q = arg(a, op, "q").toTensor();
    const at::Tensor& v = arg(a, op, "v").toTensor();
    const c10::IValue& off = arg(a, op, "seq_offsets");
    const c10::SymInt N = off.isTensor() ? off.toTensor().sym_size(0) - 1 : q.sym_size(0);
    const auto f32 = q.options().dtype(at::kFloat);
    at::Tensor ht = at::empty({0}, f32);
    if (arg(a, op, "output_final_state").toBool())
      ht = at::empty_symint({N, v.sym_size(2), q.sym_size(3), v.sym_size(3)}, f32);
    return {at::empty_symint(v.sym_sizes(), v.options()), ht};
  };
  return h;
}
