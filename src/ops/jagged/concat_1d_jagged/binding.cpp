// concat_1d_jagged: the torch hooks the generic binding (src/torch/kit.h) cannot derive:
//   meta: in SymInts: values [numel(values_a) + numel(values_b)] (a jagged part [T] has T
//         elements, a dense one B or B * S), offsets [B + 1]; for dynamic shapes. The entry makes
//         every other check.
//   save: the backward reads only the shapes of values_a and values_b, so autograd keeps
//         stand-ins of their sizes with zero strides (one element of storage) instead of them.
#include <ATen/ops/empty.h>

#include <vector>

#include "ops/jagged/common/two_parts_binding.h"
#include "torch/kit.h"

namespace {
constexpr const char* kOp = "concat_1d_jagged";

// A tensor of t's sizes, dtype and device whose strides are all 0.
at::Tensor zero_stride_like(const at::Tensor& t) {
  std::vector<c10::SymInt> strides(static_cast<size_t>(t.dim()), c10::SymInt(0));
  return t.new_empty_strided_symint(t.sym_sizes(), strides);
}

// The elements of one part, after the rank rule of its kind (jagged: 1-D; dense: [B] or [B, S]).
c10::SymInt part_elements(const recops::binding::Args& a, const char* v, const char* o) {
  const at::Tensor& t = recops::binding::arg(a, kOp, v).toTensor();
  const bool jagged = !recops::binding::arg(a, kOp, o).isNone();
  TORCH_CHECK(jagged ? t.dim() == 1 : (t.dim() == 1 || t.dim() == 2), kOp, ": ", v, " must be ",
              jagged ? "1-D [total_L]" : "dense [B] or [B, S]", ", got ", t.dim(), "-D");
  return t.sym_numel();
}
}  // namespace

RECOPS_TORCH_HOOKS(concat_1d_jagged) {
  recops::binding::TorchHooks h;
  h.save = [](const recops::binding::Args& a) {
    return recops::ops::keep_part_standins(a, kOp, zero_stride_like);
  };
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& va = recops::binding::arg(a, kOp, "values_a").toTensor();
    const c10::SymInt n =
        part_elements(a, "values_a", "offsets_a") + part_elements(a, "values_b", "offsets_b");
    const c10::IValue& oa = recops::binding::arg(a, kOp, "offsets_a");
    const c10::IValue& ob = recops::binding::arg(a, kOp, "offsets_b");
    at::TensorOptions oopts = va.options().dtype(at::kLong);
    c10::SymInt count = va.sym_size(0) + 1;  // both parts dense: B = values_a.size(0)
    for (const c10::IValue* o : {&ob, &oa}) {
      if (o->isNone()) continue;
      oopts = o->toTensor().options();
      count = o->toTensor().sym_size(0);
    }
    return {at::empty_symint({n}, va.options()), at::empty_symint({count}, oopts)};
  };
  return h;
}
