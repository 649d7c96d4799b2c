// jagged/jagged2_softmax/jagged2_softmax.cpp: the entry. All validation happens here, once; then
// the ordered implementation list runs the first implementation that accepts. At the end: the
// op's registration (its OpInfos and argument tables).
#include "ops/jagged/jagged2_softmax/jagged2_softmax.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/jagged2_host.h"
#include "ops/jagged/jagged2_softmax/impls.h"

namespace recops::ops::jagged2_softmax_ns {
namespace {
constexpr const char* kOp = "jagged2_softmax";
constexpr const char* kBwd = "jagged2_softmax_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// A data operand: [total] 1-D, floating; and the offsets and max_seq_len.
Status check_common(const char* op, const char* name, const TensorView& t,
                    const TensorView& x_offsets, int64_t max_seq_len) {
  RECOPS_CHECK(t.dtype == DType::fp64 || t.dtype == DType::fp32 || t.dtype == DType::fp16 ||
                   t.dtype == DType::bf16,
               op, ": ", name, " must be fp64, fp32, fp16 or bf16, got ", dtype_name(t.dtype));
  RECOPS_CHECK(t.ndim == 1, op, ": ", name, " must be 1-D [sum N_b^2], got ", describe(t));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "x_offsets", x_offsets));
  RECOPS_CHECK(max_seq_len >= 0, op, ": max_seq_len=", max_seq_len, " must be >= 0");
  return core::check_same_device(op, name, t, "x_offsets", x_offsets);
}

Status check_out(const char* op, const char* out_name, const TensorView& out, const char* name,
                 const TensorView& like) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, like, out_name, out));
  RECOPS_CHECK(out.shape() == like.shape() && out.dtype == like.dtype && out.is_contiguous(), op,
               ": ", out_name, " must be contiguous and like ", name, " (", describe(like),
               "); got ", describe(out));
  return Status::Ok();
}

Status run(const char* op, Params p, const TensorView& a, const TensorView& x_offsets,
           int64_t max_seq_len, bool transpose, const TensorView& out, const Context& ctx) {
  p.transpose = transpose;
  p.a = a.data;
  p.a_stride = a.strides[0];
  p.out = out.data;
  p.dtype = a.dtype;
  p.offsets = x_offsets.data;
  p.offsets_int64 = x_offsets.dtype == DType::int64;
  p.offsets_stride = x_offsets.strides[0];
  p.B = x_offsets.sizes[0] - 1;
  p.max_L = max_seq_len;
  p.total = a.sizes[0];
  p.device_index = a.device.index;
  const char* total_rule = p.backward ? "y.size(0) (total)" : "x.size(0) (total)";
  RECOPS_RETURN_IF_ERROR(
      jagged2_validate(op, "x_offsets", x_offsets, p.total, total_rule, nullptr, "", ctx));
  if (out.numel() == 0) return Status::Ok();  // no elements: nothing to launch
  return core::dispatch(op, impls(), a.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::jagged2_softmax_ns

namespace recops {

Status jagged2_softmax(const Jagged2SoftmaxArgs& a, const TensorView& out, const Context& ctx) {
  using namespace ops::jagged2_softmax_ns;
  RECOPS_RETURN_IF_ERROR(check_common(kOp, "x", a.x, a.x_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(check_out(kOp, "out", out, "x", a.x));
  return run(kOp, Params{}, a.x, a.x_offsets, a.max_seq_len, a.transpose, out, ctx);
}

Status jagged2_softmax_bwd(const Jagged2SoftmaxBwdArgs& a, const TensorView& dx,
                           const Context& ctx) {
  using namespace ops::jagged2_softmax_ns;
  RECOPS_RETURN_IF_ERROR(check_common(kBwd, "y", a.y, a.x_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "grad", a.grad, "y", a.y));
  RECOPS_CHECK(a.grad.shape() == a.y.shape() && a.grad.dtype == a.y.dtype, kBwd, ": grad ",
               describe(a.grad), " must have y's shape and dtype (", describe(a.y), ")");
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dx", dx, "y", a.y));
  Params p;
  p.backward = true;
  p.b = a.y.data;
  p.b_stride = a.y.strides[0];
  return run(kBwd, p, a.grad, a.x_offsets, a.max_seq_len, a.transpose, dx, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::jagged2_softmax_ns {
namespace {
using A = Jagged2SoftmaxArgs;
using G = Jagged2SoftmaxBwdArgs;

Status fwd_shapes(const A& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_common(kOp, "x", a.x, a.x_offsets, a.max_seq_len));
  outs->push_back({a.x.shape(), a.x.dtype});
  return Status::Ok();
}
Status fwd_run(const A& a, const kit::Outputs& o, const Context& ctx) {
  return jagged2_softmax(a, o.views[0], ctx);
}
Status bwd_shapes(const G& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_common(kBwd, "y", a.y, a.x_offsets, a.max_seq_len));
  outs->push_back({a.y.shape(), a.y.dtype});
  return Status::Ok();
}
Status bwd_run(const G& a, const kit::Outputs& o, const Context& ctx) {
  return jagged2_softmax_bwd(a, o.views[0], ctx);
}

constexpr const char* kDoc =
    R"(Softmax along the rows or columns of each square block of a jagged² tensor.

Block ``b`` of ``x`` is an ``N_b x N_b`` row-major matrix starting at ``x_offsets[b]``, with
``N_b`` the exact integer square root of ``x_offsets[b+1] - x_offsets[b]``.

Args:
    x: ``[sum N_b^2]``, fp64, fp32, fp16 or bf16.
    x_offsets: ``[B+1]`` int32 or int64 on x's device: the complete cumsum of ``N_b^2``, ending
        at ``x.size(0)``.
    max_seq_len: ``max_L >= 0``; only the top-left ``n_b = min(N_b, max_L)`` square takes part.
    transpose: False: a softmax along each row of that square (over its columns); True: along
        each column.

Returns:
    like ``x``: the softmax of each line of the window (fp32 statistics for 16-bit dtypes), 0
    outside the window; a line whose entries are all -inf gives 0; a NaN makes its line NaN.

Differentiable in ``x`` (the op ``jagged2_softmax_bwd``: ``dx = y * (grad - sum(grad * y))``
per line, exactly; the backward recomputes y). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: x not 1-D or not floating; offsets not 1-D
    int32/int64, not starting at 0, decreasing, not ending at ``x.size(0)``, or a block size
    that is not a perfect square (on CUDA checked only with validation on);
    ``max_seq_len < 0``; tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops::jagged2_softmax_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::jagged2_softmax_ns;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  reg.add(
      kit::Def<A>(kOp, "jagged")
          .arg<&A::x>("x", {.grad = true})
          .arg<&A::x_offsets>("x_offsets")
          .arg<&A::max_seq_len>("max_seq_len", {.sym = true})
          .arg<&A::transpose>("transpose")
          .out_like("out", "x")
          .shapes(fwd_shapes)
          .run(fwd_run)
          .backward(kBwd)
          .doc("", kDoc)
          // The Autograd kernel keeps out (y) for the backward (binding.cpp): no second forward.
          .save_outputs({"out"}));
  reg.add(kit::Def<G>(kBwd, "jagged")
              .arg<&G::grad>("grad")
              .arg<&G::y>("y")
              .arg<&G::x_offsets>("x_offsets")
              .arg<&G::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&G::transpose>("transpose")
              .out_like("dx", "y")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
