// jagged_to_padded_dense: the entry. All validation happens here, once; then the ordered
// implementation list runs the first implementation that accepts.
#include <string>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "core/scalar.h"
#include "ops/jagged/jagged_to_padded_dense/impls.h"
#include "recops/jagged.h"

namespace recops::ops {
namespace {
constexpr const char* kOp = "jagged_to_padded_dense";
using P = JaggedToPaddedDenseParams;

const std::vector<core::Impl<P>>& impls() {
  static const std::vector<core::Impl<P>> list = {
#ifdef RECOPS_WITH_CUDA
      {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason,
       core::cuda_capability_at_least<80, P>, jagged_to_padded_dense_cuda,
       jagged_to_padded_dense_cuda_candidates},
#endif
      {"cpu_generic", DeviceType::cpu, core::always_available, core::accept_all<P>,
       jagged_to_padded_dense_cpu, jagged_to_padded_dense_cpu_candidates},
      {"reference", DeviceType::cpu, core::always_available, core::accept_all<P>,
       jagged_to_padded_dense_reference},
  };
  return list;
}
}  // namespace

OpInfo jagged_to_padded_dense_info() {
  return {kOp, "jagged", core::describe_impls(impls())};
}

}  // namespace recops::ops

namespace recops {

Status jagged_to_padded_dense_shape(const TensorView& values, const TensorView& seq_offsets,
                                    int64_t max_seq_len, Shape* out_shape) {
  using ops::kOp;
  RECOPS_CHECK(values.ndim >= 1, kOp, ": values must have at least 1 dim [total_L, *E], got 0-D");
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(kOp, "seq_offsets", seq_offsets));
  RECOPS_CHECK(max_seq_len >= 0, kOp, ": max_seq_len=", max_seq_len, " must be >= 0");
  Shape s = {seq_offsets.sizes[0] - 1, max_seq_len};
  for (int i = 1; i < values.ndim; ++i) s.push_back(values.sizes[i]);
  RECOPS_CHECK(static_cast<int>(s.size()) <= kMaxDims, kOp, ": values has too many dims (max ",
               kMaxDims - 1, ")");
  *out_shape = std::move(s);
  return Status::Ok();
}

Status jagged_to_padded_dense(const TensorView& values, const TensorView& seq_offsets,
                              int64_t max_seq_len, double padding_value, const TensorView& out,
                              const Context& ctx) {
  using ops::kOp;
  Shape expect;
  RECOPS_RETURN_IF_ERROR(jagged_to_padded_dense_shape(values, seq_offsets, max_seq_len, &expect));
  RECOPS_RETURN_IF_ERROR(
      core::check_same_device(kOp, "values", values, "seq_offsets", seq_offsets));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "values", values, "out", out));
  RECOPS_CHECK(out.shape() == expect, kOp, ": out has shape ", shape_str(out.shape()),
               ", expected [B, max_seq_len, *E] = ", shape_str(expect));
  RECOPS_CHECK(out.dtype == values.dtype, kOp, ": out dtype ", dtype_name(out.dtype),
               " differs from values dtype ", dtype_name(values.dtype));
  RECOPS_CHECK(values.inner_contiguous(1), kOp,
               ": values' trailing dims must be dense (last stride 1); got strides of ",
               describe(values));
  RECOPS_CHECK(out.inner_contiguous(2), kOp, ": out's trailing dims must be dense (last stride 1)");

  ops::JaggedToPaddedDenseParams p;
  p.values = values.data;
  p.seq_offsets = seq_offsets.data;
  p.out = out.data;
  p.dtype = values.dtype;
  p.elem_size = dtype_size(values.dtype);
  p.offsets_int64 = seq_offsets.dtype == DType::int64;
  p.offsets_stride = seq_offsets.strides[0];
  p.B = seq_offsets.sizes[0] - 1;
  p.max_L = max_seq_len;
  p.D = values.inner_numel(1);
  p.total_L = values.sizes[0];
  p.values_row_stride = values.ndim >= 1 ? values.strides[0] : 0;
  p.out_batch_stride = out.strides[0];
  p.out_row_stride = out.strides[1];
  p.device_index = values.device.index;
  RECOPS_RETURN_IF_ERROR(
      core::encode_scalar(kOp, "padding_value", padding_value, values.dtype, &p.padding_bits));
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(kOp, "seq_offsets", seq_offsets, p.total_L,
                                                "values.size(0) (total_L)", ctx));
  if (out.numel() == 0) return Status::Ok();  // B = 0, max_L = 0 or D = 0: nothing to launch
  return core::dispatch(kOp, ops::impls(), values.device.type, p, ctx);
}

}  // namespace recops

// ---- the argument table (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
struct Args {
  TensorView values;       // [total_L, *E]
  TensorView seq_offsets;  // [B+1]
  int64_t max_seq_len = 0;
  double padding_value = 0.0;
};

Status shapes(const Args& a, std::vector<kit::OutSpec>* outs) {
  Shape s;  // [B, max_seq_len, *E]
  RECOPS_RETURN_IF_ERROR(jagged_to_padded_dense_shape(a.values, a.seq_offsets, a.max_seq_len, &s));
  outs->push_back({s, a.values.dtype});
  return Status::Ok();
}

Status run(const Args& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_to_padded_dense(a.values, a.seq_offsets, a.max_seq_len, a.padding_value, o.views[0],
                                ctx);
}

constexpr const char* kDoc = R"(Pads a jagged tensor into a dense batch.

Args:
    values: ``[total_L, *E]``, any dtype recops supports (floating, integer, bool, fp8).
    seq_offsets: ``[B+1]`` int32 or int64 on values' device; ``seq_offsets[0] == 0``,
        non-decreasing, ``seq_offsets[B] == total_L``.
    max_seq_len: ``max_L >= 0``; sequences longer than it are truncated.
    padding_value: the value at positions ``l >= min(L_b, max_L)``; for integer and bool
        values it must be integral and representable.

Returns:
    ``[B, max_L, *E]`` with ``out[b, l] = values[seq_offsets[b] + l]`` for
    ``l < min(L_b, max_L)``, else ``padding_value``.

Differentiable in ``values``: the gradient is ``dense_to_jagged(grad, seq_offsets, total_L)``
(truncated rows get 0). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: offsets not starting at 0, decreasing, or
    whose last element differs from ``values.size(0)``; offsets that are not 1-D int32/int64;
    ``max_seq_len < 0``; tensors on different devices; a padding value the dtype cannot hold.
    On CUDA, offset contents are checked only with validation on (``set_validate``).
)";
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using recops::ops::Args;
  reg.add(recops::ops::jagged_to_padded_dense_info());
  // values: trailing dims dense (the binding copies otherwise), row stride free.
  reg.add(recops::kit::Def<Args>("jagged_to_padded_dense", "jagged")
              .arg<&Args::values>("values", {.grad = true, .dense_from = 1})
              .arg<&Args::seq_offsets>("seq_offsets")
              .arg<&Args::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&Args::padding_value>("padding_value", {.def = "0.0"})
              .out("out")
              .shapes(recops::ops::shapes)
              .run(recops::ops::run)
              .doc("", recops::ops::kDoc));
}
