// __family__/__op__/__op__.cpp: the entry. All validation happens here, once; then the ordered
// implementation list runs the first implementation that accepts. At the end: the op's
// registration (its OpInfo for `recops list` and its argument table for the bindings).
#include "ops/__family__/__op__/__op__.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/__family__/__op__/impls.h"

namespace recops::ops::__op___ns {
namespace {
constexpr const char* kOp = "__op__";
constexpr const char* kBwd = "__op___bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// The checks of x and out shared by the forward and the backward (`what` names x's role).
Status check(const char* op, const char* what, const TensorView& x, const TensorView& out) {
  RECOPS_CHECK(x.dtype == DType::fp64 || x.dtype == DType::fp32 || x.dtype == DType::fp16 ||
                   x.dtype == DType::bf16,
               op, ": ", what, " must be fp64, fp32, fp16 or bf16, got ", dtype_name(x.dtype));
  RECOPS_CHECK(x.is_contiguous(), op, ": ", what, " must be contiguous");
  RECOPS_CHECK(out.shape() == x.shape() && out.dtype == x.dtype && out.is_contiguous(), op,
               ": out must be contiguous with ", what, "'s shape and dtype");
  RECOPS_CHECK(out.device == x.device, op, ": out must be on ", what, "'s device");
  return Status::Ok();
}

Status run(const char* op, const TensorView& x, double factor, const TensorView& out,
           const Context& ctx) {
  Params p;
  p.x = x.data;
  p.out = out.data;
  p.dtype = x.dtype;
  p.N = x.numel();
  p.factor = factor;
  p.device_index = x.device.index;
  if (p.N == 0) return Status::Ok();  // empty: nothing to launch
  return core::dispatch(op, impls(), x.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::__op___ns

namespace recops {

Status __op___shape(const __Op__Args& a, Shape* out_shape) {
  *out_shape = a.x.shape();
  return Status::Ok();
}

Status __op__(const __Op__Args& a, const TensorView& out, const Context& ctx) {
  using namespace ops::__op___ns;
  RECOPS_RETURN_IF_ERROR(check(kOp, "x", a.x, out));
  return run(kOp, a.x, a.factor, out, ctx);
}

Status __op___bwd(const __Op__BwdArgs& a, const TensorView& dx, const Context& ctx) {
  using namespace ops::__op___ns;
  RECOPS_CHECK(a.dout.shape() == a.x.shape(), kBwd, ": dout must have x's shape");
  RECOPS_RETURN_IF_ERROR(check(kBwd, "dout", a.dout, dx));
  return run(kBwd, a.dout, a.factor, dx, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::__op___ns {
namespace {
constexpr const char* kDoc = R"(Scales a tensor: ``out = factor * x``.

Args:
    x: any shape, fp64, fp32, fp16 or bf16 (the binding makes it contiguous).
    factor: the scale.

Returns:
    like ``x``.

Differentiable in ``x`` (``dx = factor * dout``, the op ``__op___bwd``).
)";
}  // namespace
}  // namespace recops::ops::__op___ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::__op___ns;
  reg.add(OpInfo{kOp, "__family__", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "__family__", core::describe_impls(impls())});
  reg.add(kit::Def<__Op__Args>(kOp, "__family__")
              .arg<&__Op__Args::x>("x", {.grad = true, .dense_from = 0})
              .arg<&__Op__Args::factor>("factor", {.def = "1.0"})
              .out_like("out", "x")
              .shapes_from<&__op___shape, &__Op__Args::x>()
              .run_one<&__op__>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<__Op__BwdArgs>(kBwd, "__family__")
              .arg<&__Op__BwdArgs::dout>("dout", {.dense_from = 0})
              .arg<&__Op__BwdArgs::x>("x", {.dense_from = 0})
              .arg<&__Op__BwdArgs::factor>("factor", {.def = "1.0"})
              .out_like("dx", "x")
              .shapes_like<&__Op__BwdArgs::x>()
              .run_one<&__op___bwd>()
              .doc("-", ""));
}
