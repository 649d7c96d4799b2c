// jagged/expand_1d_jagged_to_dense/expand_1d_jagged_to_dense.cpp: the entry. All validation
// happens here, once; then the ordered implementation list runs the first implementation that
// accepts. At the end: the op's registration (its OpInfo and argument table).
#include "ops/jagged/expand_1d_jagged_to_dense/expand_1d_jagged_to_dense.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/expand_1d_jagged_to_dense/impls.h"

namespace recops::ops::expand_1d_jagged_to_dense_ns {
namespace {
constexpr const char* kOp = "expand_1d_jagged_to_dense";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

Status check_meta(const Expand1dJaggedToDenseArgs& a) {
  RECOPS_CHECK(a.values.ndim == 1, kOp, ": values must be 1-D [total_L], got ", describe(a.values));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(kOp, "seq_offsets", a.seq_offsets));
  RECOPS_CHECK(a.max_len >= 0, kOp, ": max_len=", a.max_len, " must be >= 0");
  return core::check_same_device(kOp, "values", a.values, "seq_offsets", a.seq_offsets);
}
}  // namespace
}  // namespace recops::ops::expand_1d_jagged_to_dense_ns

namespace recops {

Status expand_1d_jagged_to_dense_shape(const Expand1dJaggedToDenseArgs& a, Shape* out_shape) {
  using namespace ops::expand_1d_jagged_to_dense_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(a));
  *out_shape = {a.seq_offsets.sizes[0] - 1, a.max_len};
  return Status::Ok();
}

Status expand_1d_jagged_to_dense(const Expand1dJaggedToDenseArgs& a, const TensorView& out,
                                 const Context& ctx) {
  using namespace ops::expand_1d_jagged_to_dense_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(a));
  const int64_t B = a.seq_offsets.sizes[0] - 1;
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "values", a.values, "out", out));
  RECOPS_CHECK(
      out.shape() == Shape({B, a.max_len}) && out.dtype == a.values.dtype && out.is_contiguous(),
      kOp, ": out must be contiguous [B, max_len] = [", B, ", ", a.max_len, "] of ",
      dtype_name(a.values.dtype), "; got ", describe(out));
  Params p;
  p.values = a.values.data;
  p.values_stride = a.values.strides[0];
  p.out = out.data;
  p.elem_size = a.values.itemsize();
  p.seq_offsets = a.seq_offsets.data;
  p.offsets_int64 = a.seq_offsets.dtype == DType::int64;
  p.offsets_stride = a.seq_offsets.strides[0];
  p.B = B;
  p.max_len = a.max_len;
  p.total_L = a.values.sizes[0];
  p.device_index = a.values.device.index;
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(kOp, "seq_offsets", a.seq_offsets, p.total_L,
                                                "values.size(0) (total_L)", ctx));
  if (out.numel() == 0) return Status::Ok();  // B = 0 or max_len = 0: nothing to write
  return core::dispatch(kOp, impls(), a.values.device.type, p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::expand_1d_jagged_to_dense_ns {
namespace {
constexpr const char* kDoc = R"(Expands a 1-D jagged tensor to ``[B, max_len]``.

Row ``b`` holds the sequence's values (the first ``max_len`` of them), then its last value
repeated up to ``max_len``; an empty sequence gives zeros (as generative-recommenders'
``expand_1d_jagged_to_dense``, whose output is uninitialised when values is empty).

Args:
    values: ``[total_L]``, any dtype.
    seq_offsets: ``[B+1]`` int32 or int64 on values' device, valid offsets ending at total_L.
    max_len: the dense width, >= 0.

Returns:
    ``[B, max_len]``, values' dtype.

Not differentiable (upstream has no backward): values that require grad are refused.

Raises:
    RuntimeError naming the argument and the rule: values not 1-D; ``max_len < 0``; invalid
    offsets (on CUDA checked only with validation on); tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops::expand_1d_jagged_to_dense_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::expand_1d_jagged_to_dense_ns;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(kit::Def<Expand1dJaggedToDenseArgs>(kOp, "jagged")
              .arg<&Expand1dJaggedToDenseArgs::values>("values")
              .arg<&Expand1dJaggedToDenseArgs::seq_offsets>("seq_offsets")
              .arg<&Expand1dJaggedToDenseArgs::max_len>("max_len", {.sym = true})
              .out("out")
              .shapes_from<&expand_1d_jagged_to_dense_shape, &Expand1dJaggedToDenseArgs::values>()
              .run_one<&expand_1d_jagged_to_dense>()
              .forward_only()
              .doc("", kDoc));
}
