// complete_cumsum / exclusive_cumsum / inclusive_cumsum (+ FBGEMM's asynchronous_* names): the
// torch hooks the generic binding (src/torch/kit.h) cannot derive.
//   meta: the output in SymInts, for dynamic shapes. complete: [n] -> [n+1], [R, n] -> [R, n+1];
//         exclusive and inclusive keep t's shape. dtype: out_dtype, else t's.
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
recops::binding::TorchHooks cumsum_hooks(bool complete, const char* op) {
  recops::binding::TorchHooks h;
  h.meta = [complete, op](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& t = a[0].toTensor();
    const at::ScalarType dt = a[1].isNone() ? t.scalar_type() : a[1].toScalarType();
    TORCH_CHECK(t.scalar_type() == at::kInt || t.scalar_type() == at::kLong, op,
                ": t must be int32 or int64, got ", t.scalar_type());
    TORCH_CHECK(dt == at::kInt || dt == at::kLong, op, ": out_dtype must be int32 or int64, got ",
                dt);
    const auto opts = t.options().dtype(dt);
    if (!complete) return {at::empty_symint(t.sym_sizes(), opts)};
    TORCH_CHECK(t.dim() == 1 || t.dim() == 2, op, ": t must be 1-D [n] or 2-D [R, n], got ",
                t.dim(), "-D");
    std::vector<c10::SymInt> shape(t.sym_sizes().begin(), t.sym_sizes().end());
    shape.back() = shape.back() + 1;
    return {at::empty_symint(shape, opts)};
  };
  return h;
}

template <bool kComplete, const char* kOp>
recops::binding::TorchHooks hooks() {
  return cumsum_hooks(kComplete, kOp);
}
constexpr char kComplete[] = "complete_cumsum";
constexpr char kExclusive[] = "exclusive_cumsum";
constexpr char kInclusive[] = "inclusive_cumsum";

// The three ops and FBGEMM's names for them (whose messages name ours).
const recops::binding::HooksRegistrar kRegistrars[] = {
    {"complete_cumsum", &hooks<true, kComplete>},
    {"exclusive_cumsum", &hooks<false, kExclusive>},
    {"inclusive_cumsum", &hooks<false, kInclusive>},
    {"asynchronous_complete_cumsum", &hooks<true, kComplete>},
    {"asynchronous_exclusive_cumsum", &hooks<false, kExclusive>},
    {"asynchronous_inclusive_cumsum", &hooks<false, kInclusive>},
};
}  // namespace
