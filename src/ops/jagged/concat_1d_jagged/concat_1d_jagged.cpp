// jagged/concat_1d_jagged/concat_1d_jagged.cpp: the entry. All validation happens here, once; then
// the ordered implementation list runs the first implementation that accepts. At the end: the
// op's registration (its OpInfos for `recops list` and its argument tables for the bindings).
#include "ops/jagged/concat_1d_jagged/concat_1d_jagged.h"

#include <cstdint>
#include <limits>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/two_parts.h"
#include "ops/jagged/concat_1d_jagged/impls.h"

namespace recops::ops::concat_1d_jagged_ns {
namespace {
constexpr const char* kOp = "concat_1d_jagged";
constexpr const char* kBwd = "concat_1d_jagged_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// One part: jagged [T] with offsets, or dense [B] / [B, S] without. Fills *part and *B.
Status check_part(const char* op, const char* vname, const char* oname, const TensorView& v,
                  const std::optional<TensorView>& off, Part* part, int64_t* B) {
  part->data = v.data;
  if (off) {
    RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, oname, *off));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, vname, v, oname, *off));
    RECOPS_CHECK(v.ndim == 1, op, ": ", vname, " must be 1-D [total_L] when ", oname,
                 " is given, got ", describe(v), " (rows of width D: concat_2d_jagged)");
    *B = off->sizes[0] - 1;
    part->stride = v.strides[0];
    part->batch_stride = 0;
    part->S = -1;
    part->offsets = off->data;
    part->offsets_stride = off->strides[0];
    part->total = v.sizes[0];
  } else {
    RECOPS_CHECK(v.ndim == 1 || v.ndim == 2, op, ": ", vname, " must be dense [B] or [B, S] when ",
                 oname, " is None, got ", describe(v));
    *B = v.sizes[0];
    part->batch_stride = v.strides[0];
    part->S = v.ndim == 2 ? v.sizes[1] : 1;
    part->stride = v.ndim == 2 ? v.strides[1] : 0;
    part->total = v.sizes[0] * part->S;
  }
  return Status::Ok();
}

// Every check of the forward's arguments that reads no offsets contents; fills p (output
// pointers excepted).
Status check_args(const char* op, const Concat1dJaggedArgs& a, Params* p) {
  int64_t Ba = 0, Bb = 0;
  RECOPS_RETURN_IF_ERROR(
      check_part(op, "values_a", "offsets_a", a.values_a, a.offsets_a, &p->a, &Ba));
  RECOPS_RETURN_IF_ERROR(
      check_part(op, "values_b", "offsets_b", a.values_b, a.offsets_b, &p->b, &Bb));
  DType odt = DType::int64;
  RECOPS_RETURN_IF_ERROR(
      check_parts_agree(op, a.values_a, a.offsets_a, Ba, a.values_b, a.offsets_b, Bb, &odt));
  p->offsets_int64 = odt == DType::int64;
  p->total = p->a.total + p->b.total;
  RECOPS_CHECK(p->offsets_int64 || p->total <= std::numeric_limits<int32_t>::max(), op,
               ": the output has ", p->total, " elements (values_a ", p->a.total, " + values_b ",
               p->b.total, "), more than int32 offsets can hold (2^31 - 1); use int64 offsets");
  p->dtype = a.values_a.dtype;
  p->itemsize = a.values_a.itemsize();
  p->B = Ba;
  p->device_index = a.values_a.device.index;
  return Status::Ok();
}

Status validate(const char* op, const Concat1dJaggedArgs& a, const Params& p, const Context& ctx) {
  return validate_parts_offsets(op, a.offsets_a, p.a.total, a.offsets_b, p.b.total, ctx);
}

DType offsets_dtype(const Params& p) {
  return p.offsets_int64 ? DType::int64 : DType::int32;
}
}  // namespace
}  // namespace recops::ops::concat_1d_jagged_ns

namespace recops {

Status concat_1d_jagged_shape(const Concat1dJaggedArgs& a, Shape* values_shape,
                              Shape* offsets_shape, DType* offsets_dtype) {
  using namespace ops::concat_1d_jagged_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &p));
  *values_shape = {p.total};
  *offsets_shape = {p.B + 1};
  *offsets_dtype = ops::concat_1d_jagged_ns::offsets_dtype(p);
  return Status::Ok();
}

Status concat_1d_jagged(const Concat1dJaggedArgs& a, const TensorView& values,
                        const TensorView& offsets, const Context& ctx) {
  using namespace ops::concat_1d_jagged_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &p));
  RECOPS_RETURN_IF_ERROR(
      ops::check_part_output(kOp, "values", values, {p.total}, p.dtype, a.values_a));
  RECOPS_RETURN_IF_ERROR(
      ops::check_part_output(kOp, "offsets", offsets, {p.B + 1}, offsets_dtype(p), a.values_a));
  RECOPS_RETURN_IF_ERROR(validate(kOp, a, p, ctx));
  p.out = values.data;
  p.out_offsets = offsets.data;
  // offsets always has B + 1 >= 1 entries to write, so even an empty batch runs.
  return core::dispatch(kOp, impls(), a.values_a.device.type, p, ctx);
}

Status concat_1d_jagged_bwd(const Concat1dJaggedBwdArgs& a, const TensorView& grad_a,
                            const TensorView& grad_b, const Context& ctx) {
  using namespace ops::concat_1d_jagged_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &p));
  const TensorView& g = a.grad;
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "values_a", a.values_a, "grad", g));
  RECOPS_CHECK(g.ndim == 1 && g.sizes[0] == p.total && g.dtype == p.dtype, kBwd, ": grad must be [",
               p.total, "] ", dtype_name(p.dtype), " (the forward's values); got ", describe(g));
  RECOPS_RETURN_IF_ERROR(ops::check_part_grads(kBwd, grad_a, grad_b, a.values_a, a.values_b));
  RECOPS_RETURN_IF_ERROR(validate(kBwd, a, p, ctx));
  p.backward = true;
  p.grad = g.data;
  p.grad_stride = g.strides[0];
  p.a.grad = grad_a.data;
  p.b.grad = grad_b.data;
  if (p.total == 0) return Status::Ok();  // both gradients are empty: nothing to launch
  return core::dispatch(kBwd, impls(), a.values_a.device.type, p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::concat_1d_jagged_ns {
namespace {
Status fwd_shapes(const Concat1dJaggedArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape vs, os;
  DType odt = DType::int64;
  RECOPS_RETURN_IF_ERROR(concat_1d_jagged_shape(a, &vs, &os, &odt));
  outs->push_back({vs, a.values_a.dtype});
  outs->push_back({os, odt});
  return Status::Ok();
}
Status fwd_run(const Concat1dJaggedArgs& a, const kit::Outputs& o, const Context& ctx) {
  return concat_1d_jagged(a, o.views[0], o.views[1], ctx);
}
Status bwd_shapes(const Concat1dJaggedBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &p));
  outs->push_back({a.values_a.shape(), a.values_a.dtype});
  outs->push_back({a.values_b.shape(), a.values_b.dtype});
  return Status::Ok();
}
Status bwd_run(const Concat1dJaggedBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return concat_1d_jagged_bwd(a, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc = R"(Per-sample concatenation of two 1-D jagged (or dense) parts.

Args:
    values_a: ``[T_A]`` with ``offsets_a``, else dense ``[B]`` (one element per sample) or
        ``[B, S_A]``; any dtype, any stride.
    offsets_a: ``[B+1]`` int32 or int64, or None (A dense).
    values_b: ``[T_B]`` with ``offsets_b``, else dense ``[B]`` or ``[B, S_B]``; values_a's dtype.
    offsets_b: ``[B+1]`` (offsets_a's dtype), or None (B dense).

Returns:
    ``(values, offsets)``: ``values [T_A + T_B]`` holds sample b as ``[A_b, B_b]``;
    ``offsets [B+1] = offsets_a + offsets_b`` (a dense part counts ``b * S``), in the offsets'
    dtype (int64 when both parts are dense). A dense ``[B]`` part A prepends one scalar per
    sample (SLL ``dense_jagged_cat_jagged_out``). For K > 2 parts, chain calls.

Differentiable in ``values_a`` and ``values_b`` (the op ``concat_1d_jagged_bwd``, the split;
``recops.split_1d_jagged`` is the inverse as a function).

Raises:
    RuntimeError naming the argument and the rule: bad offsets (§1.2), a jagged part not 1-D, a
    dense part not ``[B]`` or ``[B, S]``, batch sizes, dtypes or devices that differ, int32
    offsets for more than 2^31 - 1 output elements.
)";
}  // namespace
}  // namespace recops::ops::concat_1d_jagged_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::concat_1d_jagged_ns;
  using A = Concat1dJaggedArgs;
  using G = Concat1dJaggedBwdArgs;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "jagged")
              .arg<&A::values_a>("values_a", {.grad = true})
              .arg<&A::offsets_a>("offsets_a")
              .arg<&A::values_b>("values_b", {.grad = true})
              .arg<&A::offsets_b>("offsets_b")
              .out("values")
              .out("offsets", false)
              .shapes(fwd_shapes)
              .run(fwd_run)
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<G>(kBwd, "jagged")
              .arg<&G::grad>("grad")
              .arg<&G::values_a>("values_a")
              .arg<&G::offsets_a>("offsets_a")
              .arg<&G::values_b>("values_b")
              .arg<&G::offsets_b>("offsets_b")
              .out_like("grad_a", "values_a")
              .out_like("grad_b", "values_b")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
