// jagged/array_jagged_bmm_jagged_out/array_jagged_bmm_jagged_out.cpp: the entry (all validation,
// once) and the registration. The products run through ops/jagged/common/jagged2_bmm.h: the
// forward is its ay product, the backward xyt (dx) and ayt (dy).
#include "ops/jagged/array_jagged_bmm_jagged_out/array_jagged_bmm_jagged_out.h"

#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/jagged2_bmm.h"

namespace recops::ops::j2bmm {
namespace {
constexpr const char* kOp = "array_jagged_bmm_jagged_out";
constexpr const char* kBwd = "array_jagged_bmm_jagged_out_bwd";
using A = ArrayJaggedBmmJaggedOutArgs;
using G = ArrayJaggedBmmJaggedOutBwdArgs;

Status check(const char* op, const A& a) {
  return check_args(op, &a.x, "x", a.y, "y", a.y, "y", a.seq_lengths, a.x_offsets, "x_offsets",
                    a.y_offsets, "y_offsets", a.max_seq_len);
}
Status check_out(const char* op, const char* name, const TensorView& out, const TensorView& like,
                 const char* like_name) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, like_name, like, name, out));
  RECOPS_CHECK(out.shape() == like.shape() && out.dtype == like.dtype && out.is_contiguous(), op,
               ": ", name, " must be contiguous and like ", like_name, " (", describe(like),
               "); got ", describe(out));
  return Status::Ok();
}
Status product(const char* op, Mode mode, const A& a, const TensorView& lhs, const TensorView& rhs,
               const TensorView& out, bool plain, const Context& ctx) {
  Params p =
      make_params(mode, lhs, rhs, out, a.seq_lengths, a.x_offsets, a.y_offsets, a.max_seq_len);
  p.plain = plain;
  return run(op, p, out.device.type, a.seq_lengths, a.x_offsets, "x_offsets", a.y_offsets,
             "y_offsets", ctx);
}

Status forward(const A& a, const TensorView& z, bool plain, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(check(kOp, a));
  RECOPS_RETURN_IF_ERROR(check_out(kOp, "z", z, a.y, "y"));
  return product(kOp, Mode::ay, a, a.x, a.y, z, plain, ctx);
}
Status backward(const G& g, const TensorView& dx, const TensorView& dy, bool plain,
                const Context& ctx) {
  const A a{g.x, g.y, g.seq_lengths, g.x_offsets, g.y_offsets, g.max_seq_len, g.allow_tf32};
  RECOPS_RETURN_IF_ERROR(check(kBwd, a));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "y", g.y, "grad", g.grad));
  RECOPS_CHECK(
      g.grad.shape() == g.y.shape() && g.grad.dtype == g.y.dtype && g.grad.inner_contiguous(1),
      kBwd, ": grad must be like y (", describe(g.y), ") with last stride 1; got ",
      describe(g.grad));
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dx", dx, g.x, "x"));
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dy", dy, g.y, "y"));
  RECOPS_RETURN_IF_ERROR(product(kBwd, Mode::xyt, a, g.grad, g.y, dx, plain, ctx));
  return product(kBwd, Mode::ayt, a, g.x, g.grad, dy, plain, ctx);
}
}  // namespace
}  // namespace recops::ops::j2bmm

namespace recops {

Status array_jagged_bmm_jagged_out(const ArrayJaggedBmmJaggedOutArgs& a, const TensorView& z,
                                   const Context& ctx) {
  return ops::j2bmm::forward(a, z, false, ctx);
}
Status array_jagged_bmm_jagged_out_bwd(const ArrayJaggedBmmJaggedOutBwdArgs& a,
                                       const TensorView& dx, const TensorView& dy,
                                       const Context& ctx) {
  return ops::j2bmm::backward(a, dx, dy, false, ctx);
}
Status array_jagged_bmm_jagged_out_plain(const ArrayJaggedBmmJaggedOutArgs& a,
                                         const TensorView& z) {
  return ops::j2bmm::forward(a, z, true, {});
}
Status array_jagged_bmm_jagged_out_bwd_plain(const ArrayJaggedBmmJaggedOutBwdArgs& a,
                                             const TensorView& dx, const TensorView& dy) {
  return ops::j2bmm::backward(a, dx, dy, true, {});
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::j2bmm {
namespace {
Status fwd_shapes(const A& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check(kOp, a));
  outs->push_back({a.y.shape(), a.y.dtype});
  return Status::Ok();
}
Status fwd_run(const A& a, const kit::Outputs& o, const Context& ctx) {
  return array_jagged_bmm_jagged_out(a, o.views[0], ctx);
}
Status bwd_shapes(const G& g, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(
      check(kBwd, {g.x, g.y, g.seq_lengths, g.x_offsets, g.y_offsets, g.max_seq_len}));
  outs->push_back({g.x.shape(), g.x.dtype});
  outs->push_back({g.y.shape(), g.y.dtype});
  return Status::Ok();
}
Status bwd_run(const G& g, const kit::Outputs& o, const Context& ctx) {
  return array_jagged_bmm_jagged_out_bwd(g, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc =
    R"(Per sample, a square jagged² block times the sample's rows of a jagged tensor.

Block ``b`` of ``x`` is an ``N_b x N_b`` row-major matrix (row stride ``N_b``),
``N_b = seq_lengths[b]``, starting at ``x_offsets[b]``; sample ``b`` of ``y`` is rows
``[y_offsets[b], y_offsets[b+1])``.

Args:
    x: ``[sum N_b^2]``, fp64, fp32, fp16 or bf16.
    y: ``[sum N_b, D]``, x's dtype.
    seq_lengths: ``[B]`` int32 or int64, the sides ``N_b >= 0``.
    x_offsets: ``[B+1]``, the complete cumsum of ``N_b^2``, ending at ``x.size(0)``.
    y_offsets: ``[B+1]``, the complete cumsum of ``N_b``, ending at ``y.size(0)``.
    max_seq_len: ``max_L >= 0``; only ``m, k < n = min(N_b, max_L)`` take part.
    allow_tf32: accepted for SLL's signature; no path rounds to TF32.

Returns:
    ``z`` like ``y``: ``z(b, m) = sum_{k<n} x_b[m, k] y(b, k)`` for ``m < n``, rows ``m >= n`` 0.
    fp32 accumulation (fp64 for fp64), summed in a fixed order (deterministic).

Differentiable in ``x`` and ``y`` (the op ``array_jagged_bmm_jagged_out_bwd``:
``dx_b = grad_b y_b^T`` on the window, 0 elsewhere in the block; ``dy_b = x_b^T grad_b`` on the
window, 0 for rows ``k >= n``). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: not floating or mixed dtypes; x not 1-D; y not
    2-D; offsets not starting at 0, decreasing or not ending at the tensor's size; a block of
    x_offsets other than ``seq_lengths[b]^2`` or a sample of y_offsets other than
    ``seq_lengths[b]`` (on CUDA checked only with validation on); ``max_seq_len < 0``; tensors on
    different devices.
)";
}  // namespace
}  // namespace recops::ops::j2bmm

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::j2bmm;
  const auto& list = impls(Mode::ay);
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(list)});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(list)});
  reg.add(kit::Def<A>(kOp, "jagged")
              .arg<&A::x>("x", {.grad = true})
              .arg<&A::y>("y", {.grad = true, .dense_from = 1})
              .arg<&A::seq_lengths>("seq_lengths")
              .arg<&A::x_offsets>("x_offsets")
              .arg<&A::y_offsets>("y_offsets")
              .arg<&A::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&A::allow_tf32>("allow_tf32", {.def = "False"})
              .out_like("z", "y")
              .shapes(fwd_shapes)
              .run(fwd_run)
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<G>(kBwd, "jagged")
              .arg<&G::grad>("grad", {.dense_from = 1})
              .arg<&G::x>("x")
              .arg<&G::y>("y", {.dense_from = 1})
              .arg<&G::seq_lengths>("seq_lengths")
              .arg<&G::x_offsets>("x_offsets")
              .arg<&G::y_offsets>("y_offsets")
              .arg<&G::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&G::allow_tf32>("allow_tf32", {.def = "False"})
              .out_like("dx", "x")
              .out_like("dy", "y")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
