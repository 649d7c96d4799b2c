// jagged/jagged_jagged_bmm_jagged_out/jagged_jagged_bmm_jagged_out.cpp: the entry (all
// validation, once) and the registration. The products run through
// ops/jagged/common/jagged2_bmm.h: the forward is its xyt product, the backward ay (dx) and ayt
// (dy).
#include "ops/jagged/jagged_jagged_bmm_jagged_out/jagged_jagged_bmm_jagged_out.h"

#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/jagged2_bmm.h"

namespace recops::ops::j2bmm {
namespace {
constexpr const char* kOp = "jagged_jagged_bmm_jagged_out";
constexpr const char* kBwd = "jagged_jagged_bmm_jagged_out_bwd";
using A = JaggedJaggedBmmJaggedOutArgs;
using G = JaggedJaggedBmmJaggedOutBwdArgs;

Status check(const char* op, const A& a) {
  RECOPS_RETURN_IF_ERROR(check_args(op, nullptr, "z", a.x, "x", a.y, "y", a.seq_lengths,
                                    a.z_offsets, "z_offsets", a.offsets, "offsets", a.max_seq_len));
  RECOPS_CHECK(a.total_z >= 0, op, ": total_z=", a.total_z, " must be >= 0");
  return Status::Ok();
}
Status check_out(const char* op, const char* name, const TensorView& out, const Shape& shape,
                 const TensorView& like, const char* like_name) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, like_name, like, name, out));
  RECOPS_CHECK(out.shape() == shape && out.dtype == like.dtype && out.is_contiguous(), op, ": ",
               name, " must be contiguous, of ", like_name, "'s dtype ", dtype_name(like.dtype),
               " and shape [", shape[0], shape.size() > 1 ? ", ..." : "", "]; got ", describe(out));
  return Status::Ok();
}
Status product(const char* op, Mode mode, const A& a, const TensorView& lhs, const TensorView& rhs,
               const TensorView& out, bool plain, const Context& ctx) {
  Params p = make_params(mode, lhs, rhs, out, a.seq_lengths, a.z_offsets, a.offsets, a.max_seq_len);
  p.plain = plain;
  return run(op, p, out.device.type, a.seq_lengths, a.z_offsets, "z_offsets", a.offsets, "offsets",
             ctx);
}

Status forward(const A& a, const TensorView& z, bool plain, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(check(kOp, a));
  RECOPS_RETURN_IF_ERROR(check_out(kOp, "z", z, Shape{a.total_z}, a.x, "x"));
  return product(kOp, Mode::xyt, a, a.x, a.y, z, plain, ctx);
}
Status backward(const G& g, const TensorView& dx, const TensorView& dy, bool plain,
                const Context& ctx) {
  const A a{g.x,         g.y,       g.seq_lengths, g.offsets,
            g.z_offsets, g.total_z, g.max_seq_len, g.allow_tf32};
  RECOPS_RETURN_IF_ERROR(check(kBwd, a));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "x", g.x, "grad", g.grad));
  RECOPS_CHECK(g.grad.ndim == 1 && g.grad.sizes[0] == g.total_z && g.grad.dtype == g.x.dtype, kBwd,
               ": grad must be [total_z] = [", g.total_z, "] of x's dtype ", dtype_name(g.x.dtype),
               "; got ", describe(g.grad));
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dx", dx, g.x.shape(), g.x, "x"));
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dy", dy, g.y.shape(), g.y, "y"));
  RECOPS_RETURN_IF_ERROR(product(kBwd, Mode::ay, a, g.grad, g.y, dx, plain, ctx));
  return product(kBwd, Mode::ayt, a, g.grad, g.x, dy, plain, ctx);
}
}  // namespace
}  // namespace recops::ops::j2bmm

namespace recops {

Status jagged_jagged_bmm_jagged_out(const JaggedJaggedBmmJaggedOutArgs& a, const TensorView& z,
                                    const Context& ctx) {
  return ops::j2bmm::forward(a, z, false, ctx);
}
Status jagged_jagged_bmm_jagged_out_bwd(const JaggedJaggedBmmJaggedOutBwdArgs& a,
                                        const TensorView& dx, const TensorView& dy,
                                        const Context& ctx) {
  return ops::j2bmm::backward(a, dx, dy, false, ctx);
}
Status jagged_jagged_bmm_jagged_out_plain(const JaggedJaggedBmmJaggedOutArgs& a,
                                          const TensorView& z) {
  return ops::j2bmm::forward(a, z, true, {});
}
Status jagged_jagged_bmm_jagged_out_bwd_plain(const JaggedJaggedBmmJaggedOutBwdArgs& a,
                                              const TensorView& dx, const TensorView& dy) {
  return ops::j2bmm::backward(a, dx, dy, true, {});
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::j2bmm {
namespace {
Status fwd_shapes(const A& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check(kOp, a));
  outs->push_back({Shape{a.total_z}, a.x.dtype});
  return Status::Ok();
}
Status fwd_run(const A& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_jagged_bmm_jagged_out(a, o.views[0], ctx);
}
Status bwd_shapes(const G& g, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(
      check(kBwd, {g.x, g.y, g.seq_lengths, g.offsets, g.z_offsets, g.total_z, g.max_seq_len}));
  outs->push_back({g.x.shape(), g.x.dtype});
  outs->push_back({g.y.shape(), g.y.dtype});
  return Status::Ok();
}
Status bwd_run(const G& g, const kit::Outputs& o, const Context& ctx) {
  return jagged_jagged_bmm_jagged_out_bwd(g, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc =
    R"(Per sample, the products of two jagged tensors' rows, as a jagged² tensor.

Sample ``b`` of ``x`` and ``y`` is rows ``[offsets[b], offsets[b+1])``, ``N_b = seq_lengths[b]``
of them; block ``b`` of the result is ``N_b x N_b`` row-major (row stride ``N_b``) at
``z_offsets[b]``.

Args:
    x: ``[sum N_b, D]``, fp64, fp32, fp16 or bf16.
    y: like x.
    seq_lengths: ``[B]`` int32 or int64, ``N_b >= 0``.
    offsets: ``[B+1]``, the complete cumsum of ``N_b``, ending at ``x.size(0)``.
    z_offsets: ``[B+1]``, the complete cumsum of ``N_b^2``, ending at ``total_z``.
    total_z: the result's size ``z_offsets[B]`` (given so that no call reads it back).
    max_seq_len: ``max_L >= 0``; only ``m, j < n = min(N_b, max_L)`` take part.
    allow_tf32: accepted for SLL's signature; no path rounds to TF32.

Returns:
    ``z [total_z]``: ``z_b[m, j] = x(b, m) . y(b, j)`` for ``m, j < n``, 0 elsewhere in the
    block. fp32 accumulation (fp64 for fp64), summed in a fixed order (deterministic).

Differentiable in ``x`` and ``y`` (the op ``jagged_jagged_bmm_jagged_out_bwd``:
``dx_b = grad_b y_b``, ``dy_b = grad_b^T x_b`` on the window, rows ``>= n`` 0). Double backward
raises.

Raises:
    RuntimeError naming the argument and the rule: not floating or mixed dtypes; x or y not 2-D
    or of different shapes; offsets not starting at 0, decreasing or not ending at the size; a
    sample of offsets other than ``seq_lengths[b]`` rows or a block of z_offsets other than
    ``seq_lengths[b]^2`` (on CUDA checked only with validation on); ``total_z < 0``;
    ``max_seq_len < 0``; tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops::j2bmm

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::j2bmm;
  const auto& list = impls(Mode::xyt);
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(list)});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls(Mode::ay))});
  reg.add(kit::Def<A>(kOp, "jagged")
              .arg<&A::x>("x", {.grad = true, .dense_from = 1})
              .arg<&A::y>("y", {.grad = true, .dense_from = 1})
              .arg<&A::seq_lengths>("seq_lengths")
              .arg<&A::offsets>("offsets")
              .arg<&A::z_offsets>("z_offsets")
              .arg<&A::total_z>("total_z", {.sym = true})
              .arg<&A::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&A::allow_tf32>("allow_tf32", {.def = "False"})
              .out("z")
              .shapes(fwd_shapes)
              .run(fwd_run)
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<G>(kBwd, "jagged")
              .arg<&G::grad>("grad")
              .arg<&G::x>("x", {.dense_from = 1})
              .arg<&G::y>("y", {.dense_from = 1})
              .arg<&G::seq_lengths>("seq_lengths")
              .arg<&G::offsets>("offsets")
              .arg<&G::z_offsets>("z_offsets")
              .arg<&G::total_z>("total_z", {.sym = true})
              .arg<&G::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&G::allow_tf32>("allow_tf32", {.def = "False"})
              .out_like("dx", "x")
              .out_like("dy", "y")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
