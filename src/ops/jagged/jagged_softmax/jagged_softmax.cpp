// jagged/jagged_softmax/jagged_softmax.cpp: the entry. All validation happens here, once; then the
// ordered implementation list runs the first implementation that accepts. At the end: the op's
// registration (its OpInfos for `recops list` and its argument tables for the bindings).
#include "ops/jagged/jagged_softmax/jagged_softmax.h"

#include "core/cpu_features.h"
#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/jagged_softmax/impls.h"

namespace recops::ops::jagged_softmax_ns {
namespace {
constexpr const char* kOp = "jagged_softmax";
constexpr const char* kBwd = "jagged_softmax_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const std::vector<core::Impl<Params>> list = {
#ifdef RECOPS_WITH_CUDA
      {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason,
       core::cuda_capability_at_least<80, Params>, run_cuda},
#endif
      {"cpu_avx2", DeviceType::cpu, core::avx2_fma_reason, core::accept_all<Params>, run_cpu_avx2},
      {"cpu_generic", DeviceType::cpu, core::always_available, core::accept_all<Params>, run_cpu},
      {"reference", DeviceType::cpu, core::always_available, core::accept_all<Params>,
       run_reference},
  };
  return list;
}

// A data operand: [total_L, H] or [total_L], floating, last stride 1.
Status check_data(const char* op, const char* name, const TensorView& t) {
  RECOPS_CHECK(t.dtype == DType::fp64 || t.dtype == DType::fp32 || t.dtype == DType::fp16 ||
                   t.dtype == DType::bf16,
               op, ": ", name, " must be fp64, fp32, fp16 or bf16, got ", dtype_name(t.dtype));
  RECOPS_CHECK(t.ndim == 1 || t.ndim == 2, op, ": ", name,
               " must be [total_L, H] or [total_L], got ", t.ndim, "-D ", describe(t));
  RECOPS_CHECK(t.inner_contiguous(1), op, ": ", name, "'s last dim must have stride 1; got ",
               describe(t));
  return Status::Ok();
}

Status check_common(const char* op, const char* name, const TensorView& t,
                    const TensorView& seq_offsets, int64_t max_seq_len) {
  RECOPS_RETURN_IF_ERROR(check_data(op, name, t));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "seq_offsets", seq_offsets));
  RECOPS_CHECK(max_seq_len >= 0, op, ": max_seq_len=", max_seq_len, " must be >= 0");
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, t, "seq_offsets", seq_offsets));
  return Status::Ok();
}

// out: contiguous, `like`'s shape, dtype and device.
Status check_out(const char* op, const char* out_name, const TensorView& out, const char* name,
                 const TensorView& like) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, like, out_name, out));
  RECOPS_CHECK(out.shape() == like.shape() && out.dtype == like.dtype && out.is_contiguous(), op,
               ": ", out_name, " must be contiguous and like ", name, " (", shape_str(like.shape()),
               ", ", dtype_name(like.dtype), "); got ", describe(out));
  return Status::Ok();
}

Status run(const char* op, Params p, const TensorView& a, const TensorView& seq_offsets,
           int64_t max_seq_len, const TensorView& out, const Context& ctx) {
  p.a = a.data;
  p.a_row_stride = a.strides[0];
  p.out = out.data;
  p.dtype = a.dtype;
  p.seq_offsets = seq_offsets.data;
  p.offsets_int64 = seq_offsets.dtype == DType::int64;
  p.offsets_stride = seq_offsets.strides[0];
  p.B = seq_offsets.sizes[0] - 1;
  p.H = a.inner_numel(1);
  p.total_L = a.sizes[0];
  p.max_L = max_seq_len;
  p.device_index = a.device.index;
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, "seq_offsets", seq_offsets, p.total_L,
                                                "values.size(0) (total_L)", ctx));
  if (out.numel() == 0) return Status::Ok();  // no rows or H = 0: nothing to launch
  return core::dispatch(op, impls(), a.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::jagged_softmax_ns

namespace recops {

Status jagged_softmax_shape(const JaggedSoftmaxArgs& a, Shape* out_shape) {
  using namespace ops::jagged_softmax_ns;
  RECOPS_RETURN_IF_ERROR(check_common(kOp, "values", a.values, a.seq_offsets, a.max_seq_len));
  *out_shape = a.values.shape();
  return Status::Ok();
}

Status jagged_softmax(const JaggedSoftmaxArgs& a, const TensorView& out, const Context& ctx) {
  using namespace ops::jagged_softmax_ns;
  RECOPS_RETURN_IF_ERROR(check_common(kOp, "values", a.values, a.seq_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(check_out(kOp, "out", out, "values", a.values));
  return run(kOp, Params{}, a.values, a.seq_offsets, a.max_seq_len, out, ctx);
}

Status jagged_softmax_bwd(const JaggedSoftmaxBwdArgs& a, const TensorView& dx, const Context& ctx) {
  using namespace ops::jagged_softmax_ns;
  RECOPS_RETURN_IF_ERROR(check_common(kBwd, "y", a.y, a.seq_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(check_data(kBwd, "grad", a.grad));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "grad", a.grad, "y", a.y));
  RECOPS_CHECK(a.grad.shape() == a.y.shape() && a.grad.dtype == a.y.dtype, kBwd, ": grad ",
               describe(a.grad), " must have y's shape and dtype (", describe(a.y), ")");
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dx", dx, "y", a.y));
  Params p;
  p.backward = true;
  p.b = a.y.data;
  p.b_row_stride = a.y.strides[0];
  return run(kBwd, p, a.grad, a.seq_offsets, a.max_seq_len, dx, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::jagged_softmax_ns {
namespace {
Status fwd_shapes(const JaggedSoftmaxArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(jagged_softmax_shape(a, &s));
  outs->push_back({s, a.values.dtype});
  return Status::Ok();
}
Status fwd_run(const JaggedSoftmaxArgs& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_softmax(a, o.views[0], ctx);
}
Status bwd_shapes(const JaggedSoftmaxBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_common(kBwd, "y", a.y, a.seq_offsets, a.max_seq_len));
  outs->push_back({a.y.shape(), a.y.dtype});
  return Status::Ok();
}
Status bwd_run(const JaggedSoftmaxBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_softmax_bwd(a, o.views[0], ctx);
}

constexpr const char* kDoc = R"(Softmax along the jagged axis, per sequence and column.

Args:
    values: ``[total_L, H]`` or ``[total_L]`` (H = 1), fp64, fp32, fp16 or bf16.
    seq_offsets: ``[B+1]`` int32 or int64 on values' device; ``seq_offsets[0] == 0``,
        non-decreasing, ``seq_offsets[B] == total_L``.
    max_seq_len: ``max_L >= 0``; only rows ``l < n_b = min(L_b, max_L)`` of sequence b take part.

Returns:
    like ``values``: ``y[l, h] = exp(x[l, h] - m_h) / sum_{l' < n_b} exp(x[l', h] - m_h)``
    per sequence, ``m_h`` the column maximum over ``l < n_b``; rows ``l >= n_b`` are 0; a column
    whose valid entries are all -inf gives 0; a NaN makes its column NaN. fp32 accumulation for
    16-bit dtypes.

Differentiable in ``values`` (the op ``jagged_softmax_bwd``; the backward recomputes y).
Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: offsets not starting at 0, decreasing, or
    whose last element differs from ``values.size(0)``; offsets that are not 1-D int32/int64;
    ``max_seq_len < 0``; values of more than 2 dims or a non-floating dtype; tensors on
    different devices. On CUDA, offset contents are checked only with validation on.
)";
}  // namespace
}  // namespace recops::ops::jagged_softmax_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::jagged_softmax_ns;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  reg.add(kit::Def<JaggedSoftmaxArgs>(kOp, "jagged")
              .arg<&JaggedSoftmaxArgs::values>("values", {.grad = true, .dense_from = 1})
              .arg<&JaggedSoftmaxArgs::seq_offsets>(
                  "seq_offsets", {.py = {.def = "None", .rule = "nested_out values"}})
              .arg<&JaggedSoftmaxArgs::max_seq_len>("max_seq_len", {.sym = true})
              .out_like("out", "values")
              .shapes(fwd_shapes)
              .run(fwd_run)
              .backward(kBwd)
              .doc("", kDoc)
              // The Autograd kernel keeps out (y) for the backward (binding.cpp), as torch's
              // softmax keeps its result: no second forward.
              .save_outputs({"out"}));
  reg.add(kit::Def<JaggedSoftmaxBwdArgs>(kBwd, "jagged")
              .arg<&JaggedSoftmaxBwdArgs::grad>("grad", {.dense_from = 1})
              .arg<&JaggedSoftmaxBwdArgs::y>("y", {.dense_from = 1})
              .arg<&JaggedSoftmaxBwdArgs::seq_offsets>("seq_offsets")
              .arg<&JaggedSoftmaxBwdArgs::max_seq_len>("max_seq_len", {.sym = true})
              .out_like("dx", "y")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
