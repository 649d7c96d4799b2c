// jagged/concat_2d_jagged/concat_2d_jagged.cpp: the entry. All validation happens here, once; then
// the ordered implementation list runs the first implementation that accepts. At the end: the
// op's registration (its OpInfos for `recops list` and its argument tables for the bindings).
#include "ops/jagged/concat_2d_jagged/concat_2d_jagged.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/two_parts.h"
#include "ops/jagged/concat_2d_jagged/impls.h"

namespace recops::ops::concat_2d_jagged_ns {
namespace {
constexpr const char* kOp = "concat_2d_jagged";
constexpr const char* kBwd = "concat_2d_jagged_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// One side: jagged [T, D] with offsets, or dense [B, S, D] without. Fills s, *B and *D.
Status check_side(const char* op, const char* vname, const char* oname, const TensorView& v,
                  const std::optional<TensorView>& off, Side* s, int64_t* B, int64_t* D) {
  s->data = v.data;
  if (off) {
    RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, oname, *off));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, vname, v, oname, *off));
    RECOPS_CHECK(v.ndim == 2, op, ": ", vname, " must be [total_L, D] when ", oname,
                 " is given, got ", describe(v));
    RECOPS_CHECK(v.inner_contiguous(1), op, ": ", vname, "'s last dim must have stride 1; got ",
                 describe(v));
    *B = off->sizes[0] - 1;
    *D = v.sizes[1];
    s->row_stride = v.strides[0];
    s->batch_stride = 0;
    s->S = -1;
    s->offsets = off->data;
    s->offsets_stride = off->strides[0];
    s->rows = v.sizes[0];
  } else {
    RECOPS_CHECK(v.ndim == 3, op, ": ", vname, " must be dense [B, S, D] when ", oname,
                 " is None, got ", describe(v));
    RECOPS_CHECK(v.inner_contiguous(2), op, ": ", vname, "'s last dim must have stride 1; got ",
                 describe(v));
    *B = v.sizes[0];
    *D = v.sizes[2];
    s->row_stride = v.strides[1];
    s->batch_stride = v.strides[0];
    s->S = v.sizes[1];
    // An empty [B, S, 0] may carry extents whose product is past int64 (found by the fuzzer).
    RECOPS_CHECK(!__builtin_mul_overflow(v.sizes[0], v.sizes[1], &s->rows), op, ": ", vname,
                 "'s B·S = ", v.sizes[0], "·", v.sizes[1], " rows overflow int64");
  }
  return Status::Ok();
}

// Every check of the forward's arguments; fills p (pointers of outputs excepted).
Status check_args(const char* op, const Concat2dJaggedArgs& a, Params* p) {
  int64_t Ba = 0, Bb = 0, Da = 0, Db = 0;
  RECOPS_RETURN_IF_ERROR(
      check_side(op, "values_a", "offsets_a", a.values_a, a.offsets_a, &p->a, &Ba, &Da));
  RECOPS_RETURN_IF_ERROR(
      check_side(op, "values_b", "offsets_b", a.values_b, a.offsets_b, &p->b, &Bb, &Db));
  DType odt = DType::int64;
  RECOPS_RETURN_IF_ERROR(
      check_parts_agree(op, a.values_a, a.offsets_a, Ba, a.values_b, a.offsets_b, Bb, &odt));
  RECOPS_CHECK(Da == Db, op, ": values_b's row width D=", Db, " must equal values_a's D=", Da);
  RECOPS_CHECK(a.n_prefix_from_right >= 0, op, ": n_prefix_from_right=", a.n_prefix_from_right,
               " must be >= 0");
  RECOPS_CHECK(!a.is_replace || a.n_prefix_from_right == 0, op,
               ": is_replace=True needs n_prefix_from_right=0, got ", a.n_prefix_from_right);
  p->offsets_int64 = odt == DType::int64;
  p->dtype = a.values_a.dtype;
  p->itemsize = a.values_a.itemsize();
  p->B = Ba;
  p->D = Da;
  p->k = a.n_prefix_from_right;
  p->is_replace = a.is_replace;
  RECOPS_CHECK(!__builtin_add_overflow(p->a.rows, a.is_replace ? 0 : p->b.rows, &p->out_rows), op,
               ": the output's rows (", p->a.rows, " + ", p->b.rows, ") overflow int64");
  p->device_index = a.values_a.device.index;
  return Status::Ok();
}

Status validate(const char* op, const Concat2dJaggedArgs& a, const Params& p, const Context& ctx) {
  return validate_parts_offsets(op, a.offsets_a, p.a.rows, a.offsets_b, p.b.rows, ctx);
}
}  // namespace
}  // namespace recops::ops::concat_2d_jagged_ns

namespace recops {

Status concat_2d_jagged_shape(const Concat2dJaggedArgs& a, Shape* out_shape) {
  using namespace ops::concat_2d_jagged_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &p));
  *out_shape = {p.out_rows, p.D};
  return Status::Ok();
}

Status concat_2d_jagged(const Concat2dJaggedArgs& a, const TensorView& out, const Context& ctx) {
  using namespace ops::concat_2d_jagged_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &p));
  RECOPS_RETURN_IF_ERROR(
      ops::check_part_output(kOp, "out", out, {p.out_rows, p.D}, p.dtype, a.values_a));
  RECOPS_RETURN_IF_ERROR(validate(kOp, a, p, ctx));
  p.out = out.data;
  if (out.numel() == 0) return Status::Ok();  // no rows or D = 0: nothing to launch
  return core::dispatch(kOp, impls(), a.values_a.device.type, p, ctx);
}

Status concat_2d_jagged_bwd(const Concat2dJaggedBwdArgs& a, const TensorView& grad_a,
                            const TensorView& grad_b, const Context& ctx) {
  using namespace ops::concat_2d_jagged_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &p));
  const TensorView& g = a.grad;
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "values_a", a.values_a, "grad", g));
  RECOPS_CHECK(
      g.ndim == 2 && g.sizes[0] == p.out_rows && g.sizes[1] == p.D && g.dtype == a.values_a.dtype,
      kBwd, ": grad must be [", p.out_rows, ", ", p.D, "] ", dtype_name(a.values_a.dtype),
      " (the forward's out); got ", describe(g));
  RECOPS_CHECK(g.inner_contiguous(1), kBwd, ": grad's last dim must have stride 1; got ",
               describe(g));
  RECOPS_RETURN_IF_ERROR(ops::check_part_grads(kBwd, grad_a, grad_b, a.values_a, a.values_b));
  RECOPS_RETURN_IF_ERROR(validate(kBwd, a, p, ctx));
  p.backward = true;
  p.grad = g.data;
  p.grad_row_stride = g.strides[0];
  p.a.grad = grad_a.data;
  p.b.grad = grad_b.data;
  if (grad_a.numel() == 0 && grad_b.numel() == 0) return Status::Ok();
  return core::dispatch(kBwd, impls(), a.values_a.device.type, p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::concat_2d_jagged_ns {
namespace {
Status fwd_shapes(const Concat2dJaggedArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(concat_2d_jagged_shape(a, &s));
  outs->push_back({s, a.values_a.dtype});
  return Status::Ok();
}
Status fwd_run(const Concat2dJaggedArgs& a, const kit::Outputs& o, const Context& ctx) {
  return concat_2d_jagged(a, o.views[0], ctx);
}
Status bwd_shapes(const Concat2dJaggedBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &p));
  outs->push_back({a.values_a.shape(), a.values_a.dtype});
  outs->push_back({a.values_b.shape(), a.values_b.dtype});
  return Status::Ok();
}
Status bwd_run(const Concat2dJaggedBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return concat_2d_jagged_bwd(a, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc = R"(Per-sample concatenation of two row sets (jagged or dense).

Args:
    values_a: ``[T_A, D]`` with ``offsets_a``, else dense ``[B, S_A, D]``; any dtype.
    offsets_a: ``[B+1]`` int32 or int64, or None (A dense: S_A rows per sample).
    values_b: ``[T_B, D]`` with ``offsets_b``, else dense ``[B, S_B, D]``; values_a's dtype.
    offsets_b: ``[B+1]`` (offsets_a's dtype), or None (B dense).
    n_prefix_from_right: k >= 0; sample b becomes ``[B_b[:k'], A_b, B_b[k':]]``, k' = min(k, len(B_b)).
    is_replace: A_b with its last r = min(len(A_b), len(B_b)) rows replaced by B_b's last r rows
        (k must be 0); out then has A's rows.

Returns:
    ``[T_A + T_B, D]`` (``[T_A, D]`` with is_replace); the output offsets are
    ``offsets_a + offsets_b`` (a dense side counts ``b * S``), not returned.

Differentiable in ``values_a`` and ``values_b`` (the op ``concat_2d_jagged_bwd``, the split).

Raises:
    RuntimeError naming the argument and the rule: bad offsets (§1.2), a jagged side not 2-D or
    a dense side not 3-D, batch sizes, widths, dtypes or devices that differ,
    ``n_prefix_from_right < 0``, ``is_replace`` with ``n_prefix_from_right != 0``.
)";
}  // namespace
}  // namespace recops::ops::concat_2d_jagged_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::concat_2d_jagged_ns;
  using A = Concat2dJaggedArgs;
  using G = Concat2dJaggedBwdArgs;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "jagged")
              .arg<&A::values_a>("values_a", {.grad = true, .dense_from = -2})
              .arg<&A::offsets_a>("offsets_a")
              .arg<&A::values_b>("values_b", {.grad = true, .dense_from = -2})
              .arg<&A::offsets_b>("offsets_b")
              .arg<&A::n_prefix_from_right>("n_prefix_from_right", {.def = "0"})
              .arg<&A::is_replace>("is_replace", {.def = "False"})
              .out("out")
              .shapes(fwd_shapes)
              .run(fwd_run)
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<G>(kBwd, "jagged")
              .arg<&G::grad>("grad", {.dense_from = -2})
              .arg<&G::values_a>("values_a", {.dense_from = -2})
              .arg<&G::offsets_a>("offsets_a")
              .arg<&G::values_b>("values_b", {.dense_from = -2})
              .arg<&G::offsets_b>("offsets_b")
              .arg<&G::n_prefix_from_right>("n_prefix_from_right", {.def = "0"})
              .arg<&G::is_replace>("is_replace", {.def = "False"})
              .out_like("grad_a", "values_a")
              .out_like("grad_b", "values_b")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
