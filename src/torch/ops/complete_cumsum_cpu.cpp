// complete_cumsum / exclusive_cumsum / inclusive_cumsum (+ asynchronous_* aliases), CPU kernels
// (and the shared body the CUDA kernels call).
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "recops/jagged.h"
#include "torch/convert.h"
#include "torch/ops/bodies.h"

namespace recops::binding {

at::Tensor run_cumsum(CumsumKind kind, const at::Tensor& t_in,
                      std::optional<at::ScalarType> out_dtype, const Context& ctx_in) {
  const char* op = kind == CumsumKind::complete    ? "complete_cumsum"
                   : kind == CumsumKind::exclusive ? "exclusive_cumsum"
                                                   : "inclusive_cumsum";
  // complete takes any strides; exclusive/inclusive scan the flattened tensor, so a tensor of
  // more than one dim is made contiguous (1-D ones keep their stride).
  const at::Tensor t = kind == CumsumKind::complete || t_in.dim() <= 1 ? t_in : dense_from(t_in, 0);
  const TensorView tv = to_view(t, op, "t");
  Shape shape;
  if (kind == CumsumKind::complete) {
    check(complete_cumsum_shape(tv, &shape));  // [n+1] or [R, n+1]
  } else {
    shape = tv.shape();
  }
  const at::ScalarType dt = out_dtype.value_or(t.scalar_type());
  to_dtype(dt, op, "out_dtype");  // a dtype recops lacks is named here; the entry checks the rest
  at::Tensor out = new_output(shape, t.options().dtype(dt));
  const TensorView ov = to_view(out, op, "out");

  Context ctx = ctx_in;
  at::Tensor workspace;
  if (const size_t bytes = cumsum_workspace_bytes(tv, ov); bytes > 0) {
    workspace = at::empty({static_cast<int64_t>(bytes)}, t.options().dtype(at::kByte));
    ctx.workspace = workspace.data_ptr();
    ctx.workspace_bytes = bytes;
  }
  switch (kind) {
    case CumsumKind::complete: check(complete_cumsum(tv, ov, ctx)); break;
    case CumsumKind::exclusive: check(exclusive_cumsum(tv, ov, ctx)); break;
    case CumsumKind::inclusive: check(inclusive_cumsum(tv, ov, ctx)); break;
  }
  return out;
}

namespace {
template <CumsumKind K>
at::Tensor cumsum_cpu(const at::Tensor& t, std::optional<at::ScalarType> out_dtype) {
  return run_cumsum(K, t, out_dtype, cpu_context());
}
}  // namespace

}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CPU, m) {
  using recops::binding::cumsum_cpu;
  using recops::binding::CumsumKind;
  m.impl("complete_cumsum", TORCH_FN(cumsum_cpu<CumsumKind::complete>));
  m.impl("exclusive_cumsum", TORCH_FN(cumsum_cpu<CumsumKind::exclusive>));
  m.impl("inclusive_cumsum", TORCH_FN(cumsum_cpu<CumsumKind::inclusive>));
  m.impl("asynchronous_complete_cumsum", TORCH_FN(cumsum_cpu<CumsumKind::complete>));
  m.impl("asynchronous_exclusive_cumsum", TORCH_FN(cumsum_cpu<CumsumKind::exclusive>));
  m.impl("asynchronous_inclusive_cumsum", TORCH_FN(cumsum_cpu<CumsumKind::inclusive>));
}
