// jagged/jagged2_to_padded_dense/jagged2_to_padded_dense.cpp: the entry. All validation happens
// here, once; then the ordered implementation list runs the first implementation that accepts.
// At the end: the op's registration (its OpInfos and argument tables).
#include "ops/jagged/jagged2_to_padded_dense/jagged2_to_padded_dense.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "core/scalar.h"
#include "ops/jagged/common/jagged2_host.h"
#include "ops/jagged/jagged2_to_padded_dense/impls.h"

namespace recops::ops::jagged2_to_padded_dense_ns {
namespace {
constexpr const char* kOp = "jagged2_to_padded_dense";
constexpr const char* kBwd = "jagged2_to_padded_dense_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

Status check_meta(const char* op, const TensorView& values, const TensorView& offsets,
                  int64_t max_length) {
  RECOPS_CHECK(values.ndim == 1, op, ": values must be 1-D [sum N_b^2], got ", describe(values));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "offsets", offsets));
  RECOPS_CHECK(max_length >= 0, op, ": max_length=", max_length, " must be >= 0");
  return core::check_same_device(op, "values", values, "offsets", offsets);
}

Params base(const TensorView& values, const TensorView& offsets, int64_t max_length) {
  Params p;
  p.elem_size = values.itemsize();
  p.offsets = offsets.data;
  p.offsets_int64 = offsets.dtype == DType::int64;
  p.offsets_stride = offsets.strides[0];
  p.B = offsets.sizes[0] - 1;
  p.max_L = max_length;
  p.total = values.sizes[0];
  p.device_index = values.device.index;
  return p;
}

Status run(const char* op, const Params& p, const TensorView& offsets, int64_t out_numel,
           DeviceType device, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(jagged2_validate(op, "offsets", offsets, p.total, "values.size(0) (total)",
                                          nullptr, "", ctx));
  if (out_numel == 0) return Status::Ok();  // nothing to write
  return core::dispatch(op, impls(), device, p, ctx);
}
}  // namespace
}  // namespace recops::ops::jagged2_to_padded_dense_ns

namespace recops {

Status jagged2_to_padded_dense_shape(const Jagged2ToPaddedDenseArgs& a, Shape* out_shape) {
  using namespace ops::jagged2_to_padded_dense_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(kOp, a.values, a.offsets, a.max_length));
  *out_shape = {a.offsets.sizes[0] - 1, a.max_length, a.max_length};
  return Status::Ok();
}

Status jagged2_to_padded_dense(const Jagged2ToPaddedDenseArgs& a, const TensorView& out,
                               const Context& ctx) {
  using namespace ops::jagged2_to_padded_dense_ns;
  Shape expect;
  RECOPS_RETURN_IF_ERROR(jagged2_to_padded_dense_shape(a, &expect));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "values", a.values, "out", out));
  RECOPS_CHECK(out.shape() == expect && out.dtype == a.values.dtype && out.is_contiguous(), kOp,
               ": out must be contiguous [B, max_length, max_length] = ", shape_str(expect), " of ",
               dtype_name(a.values.dtype), "; got ", describe(out));
  Params p = base(a.values, a.offsets, a.max_length);
  RECOPS_RETURN_IF_ERROR(
      core::encode_scalar(kOp, "padding_value", a.padding_value, a.values.dtype, &p.padding_bits));
  p.src = a.values.data;
  p.jagged_stride = a.values.strides[0];
  p.dst = out.data;
  // Saturates: a max_length whose square is past int64 leaves only an empty out (B = 0), which
  // run() returns before any kernel (found by fuzz_jagged_entries: UBSan at max_length 2^32+71).
  p.dense_b = TensorView::mul_sat(a.max_length, a.max_length);
  p.dense_m = a.max_length;
  return run(kOp, p, a.offsets, out.numel(), a.values.device.type, ctx);
}

Status jagged2_to_padded_dense_bwd(const Jagged2ToPaddedDenseBwdArgs& a,
                                   const TensorView& grad_values, const Context& ctx) {
  using namespace ops::jagged2_to_padded_dense_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(kBwd, a.values, a.offsets, a.max_length));
  const int64_t B = a.offsets.sizes[0] - 1;
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "grad", a.grad, "values", a.values));
  RECOPS_CHECK(a.grad.shape() == Shape({B, a.max_length, a.max_length}) &&
                   a.grad.dtype == a.values.dtype && a.grad.inner_contiguous(2),
               kBwd, ": grad must be [B, max_length, max_length] = [", B, ", ", a.max_length, ", ",
               a.max_length, "] of values' dtype ", dtype_name(a.values.dtype),
               " with last stride 1; got ", describe(a.grad));
  RECOPS_RETURN_IF_ERROR(
      core::check_same_device(kBwd, "values", a.values, "grad_values", grad_values));
  RECOPS_CHECK(grad_values.shape() == a.values.shape() && grad_values.dtype == a.values.dtype &&
                   grad_values.is_contiguous(),
               kBwd, ": grad_values must be contiguous like values (", describe(a.values),
               "); got ", describe(grad_values));
  Params p = base(a.values, a.offsets, a.max_length);
  p.backward = true;
  p.src = a.grad.data;
  p.dense_b = a.grad.strides[0];
  p.dense_m = a.grad.strides[1];
  p.dst = grad_values.data;
  return run(kBwd, p, a.offsets, grad_values.numel(), a.values.device.type, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::jagged2_to_padded_dense_ns {
namespace {
Status fwd_shapes(const Jagged2ToPaddedDenseArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(jagged2_to_padded_dense_shape(a, &s));
  outs->push_back({s, a.values.dtype});
  return Status::Ok();
}
Status fwd_run(const Jagged2ToPaddedDenseArgs& a, const kit::Outputs& o, const Context& ctx) {
  return jagged2_to_padded_dense(a, o.views[0], ctx);
}
Status bwd_shapes(const Jagged2ToPaddedDenseBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_meta(kBwd, a.values, a.offsets, a.max_length));
  outs->push_back({a.values.shape(), a.values.dtype});
  return Status::Ok();
}
Status bwd_run(const Jagged2ToPaddedDenseBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return jagged2_to_padded_dense_bwd(a, o.views[0], ctx);
}

constexpr const char* kDoc =
    R"(Pads a jagged² tensor (one square matrix per sample) into a dense batch.

Block ``b`` of ``values`` is an ``N_b x N_b`` row-major matrix starting at ``offsets[b]``, with
``N_b`` the exact integer square root of ``offsets[b+1] - offsets[b]`` (SLL's
``jagged2_to_padded_dense``, whose rows are strided by ``min(N_b, max_length)`` instead).

Args:
    values: ``[sum N_b^2]``, any dtype recops supports.
    offsets: ``[B+1]`` int32 or int64 on values' device: the complete cumsum of ``N_b^2``,
        ending at ``values.size(0)``.
    max_length: ``max_L >= 0``; the top-left ``min(N_b, max_L)`` square of each block is kept.
    padding_value: the value elsewhere; for integer and bool values it must be integral and
        representable.

Returns:
    ``[B, max_L, max_L]``: ``out[b, m, n] = values[offsets[b] + m * N_b + n]`` for
    ``m, n < min(N_b, max_L)``, else ``padding_value``.

Differentiable in ``values`` (the op ``jagged2_to_padded_dense_bwd``: the same window copied
back, 0 elsewhere in the block). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: values not 1-D; offsets not 1-D int32/int64,
    not starting at 0, decreasing, not ending at ``values.size(0)``, or a block size that is not
    a perfect square (on CUDA checked only with validation on); ``max_length < 0``; tensors on
    different devices; a padding value the dtype cannot hold.
)";
}  // namespace
}  // namespace recops::ops::jagged2_to_padded_dense_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::jagged2_to_padded_dense_ns;
  using A = Jagged2ToPaddedDenseArgs;
  using G = Jagged2ToPaddedDenseBwdArgs;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "jagged")
              .arg<&A::values>("values", {.grad = true})
              .arg<&A::offsets>("offsets")
              .arg<&A::max_length>("max_length", {.sym = true})
              .arg<&A::padding_value>("padding_value", {.def = "0.0"})
              .out("out")
              .shapes(fwd_shapes)
              .run(fwd_run)
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<G>(kBwd, "jagged")
              .arg<&G::grad>("grad", {.dense_from = 2})
              .arg<&G::values>("values")
              .arg<&G::offsets>("offsets")
              .arg<&G::max_length>("max_length", {.sym = true})
              .arg<&G::padding_value>("padding_value", {.def = "0.0"})
              .out_like("grad_values", "values")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
