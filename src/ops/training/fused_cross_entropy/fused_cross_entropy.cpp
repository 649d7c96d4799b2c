// training/fused_cross_entropy/fused_cross_entropy.cpp: the entry of fused_cross_entropy,
// fused_cross_entropy_fwd and fused_cross_entropy_bwd. All validation happens here, once (label
// values on the CPU); then the ordered implementation list runs the first implementation that
// accepts. At the end: the OpInfos and the argument tables.
#include "ops/training/fused_cross_entropy/fused_cross_entropy.h"

#include <cmath>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/training/common/ce_entry.h"
#include "ops/training/common/row_norm_entry.h"
#include "ops/training/fused_cross_entropy/impls.h"

namespace recops::ops::fused_cross_entropy_ns {
namespace {
using training::check_like;
using training::is_float;

constexpr const char* kOp = "fused_cross_entropy";
constexpr const char* kFwd = "fused_cross_entropy_fwd";
constexpr const char* kBwd = "fused_cross_entropy_bwd";

// cuda_sm80, then cpu_avx2 (where core::avx2_fma_reason() allows), cpu_generic, reference.
const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      training::row_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference, run_cpu_avx2);
  return list;
}

DType stat_dtype_of(const TensorView& logits) {
  return logits.dtype == DType::fp64 ? DType::fp64 : DType::fp32;
}
size_t stat_size(const TensorView& logits) {
  return logits.dtype == DType::fp64 ? 8 : 4;
}

// logits [N, V], labels [N], weight [N], the scalars.
Status check_inputs(const char* op, const CeScalars& s, const TensorView& logits,
                    const TensorView& labels, const std::optional<TensorView>& weight) {
  RECOPS_CHECK(is_float(logits.dtype), op, ": logits must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(logits.dtype));
  RECOPS_CHECK(logits.ndim == 2 && logits.sizes[1] >= 1, op,
               ": logits must be [N, V] with V >= 1; got ", describe(logits));
  RECOPS_CHECK(logits.is_contiguous(), op, ": logits must be contiguous; got ", describe(logits));
  const int64_t N = logits.sizes[0];
  RECOPS_CHECK(labels.dtype == DType::int32 || labels.dtype == DType::int64, op,
               ": labels must be int32 or int64, got ", dtype_name(labels.dtype));
  RECOPS_CHECK(labels.ndim == 1 && labels.sizes[0] == N && labels.is_contiguous(), op,
               ": labels must be contiguous [N] = [", N, "] (logits' rows); got ",
               describe(labels));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "logits", logits, "labels", labels));
  if (weight) {
    RECOPS_CHECK(weight->dtype == DType::fp32 || weight->dtype == logits.dtype, op,
                 ": weight must be fp32 or logits' dtype (", dtype_name(logits.dtype), "); got ",
                 dtype_name(weight->dtype));
    RECOPS_CHECK(weight->ndim == 1 && weight->sizes[0] == N && weight->is_contiguous(), op,
                 ": weight must be contiguous [N] = [", N, "] (logits' rows); got ",
                 describe(*weight));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "logits", logits, "weight", *weight));
  }
  return training::check_ce_scalars(op, s);
}

Status check_modes(const char* op, const FusedCrossEntropyArgs& a) {
  RECOPS_CHECK(!a.precompute_grad, op,
               ": precompute_grad=True is not implemented yet (issue 18); use the default mode");
  RECOPS_CHECK(!a.inplace, op, ": inplace=True is not implemented yet (issue 18)");
  return Status::Ok();
}

Params params_of(const CeScalars& s, const TensorView& logits, const TensorView& labels,
                 const std::optional<TensorView>& weight) {
  Params p;
  p.logits = logits.data;
  p.labels = labels.data;
  p.weight = weight ? weight->data : nullptr;
  p.weight_dtype = weight ? weight->dtype : DType::fp32;
  p.labels_int64 = labels.dtype == DType::int64;
  p.dtype = logits.dtype;
  p.reduction = static_cast<Red>(static_cast<int>(s.reduction));
  p.N = logits.sizes[0];
  p.V = logits.sizes[1];
  p.ignore_index = s.ignore_index;
  p.label_smoothing = s.label_smoothing;
  p.z_loss_scale = s.z_loss_scale;
  p.softcap = s.softcap;
  p.device_index = logits.device.index;
  return p;
}

// The forward of both ops; lse: the output, or nullptr (the workspace holds it).
Status forward(const char* op, const FusedCrossEntropyArgs& a, const TensorView& loss,
               const TensorView& z_loss, const TensorView* lse, const Context& ctx) {
  Shape ls;
  DType st;
  RECOPS_RETURN_IF_ERROR(check_inputs(op, a, a.logits, a.labels, a.weight));
  RECOPS_RETURN_IF_ERROR(check_modes(op, a));
  RECOPS_RETURN_IF_ERROR(fused_cross_entropy_shape(a, &ls, &st));
  RECOPS_RETURN_IF_ERROR(training::check_ce_labels(op, a, a.labels, a.logits.sizes[1], ctx));
  RECOPS_RETURN_IF_ERROR(check_like(op, "loss", loss, a.logits, ls, st));
  RECOPS_RETURN_IF_ERROR(check_like(op, "z_loss", z_loss, a.logits, ls, st));
  const int64_t N = a.logits.sizes[0];
  if (lse) RECOPS_RETURN_IF_ERROR(check_like(op, "lse", *lse, a.logits, {N}, st));
  const size_t need = fused_cross_entropy_workspace_bytes(a, lse != nullptr);
  RECOPS_RETURN_IF_ERROR(training::check_ce_workspace(op, ctx, need));
  Params p = params_of(a, a.logits, a.labels, a.weight);
  p.loss = loss.data;
  p.z_loss = z_loss.data;
  char* ws = static_cast<char*>(ctx.workspace);
  if (lse) {
    p.lse = lse->data;
  } else {
    p.lse = ws;
    ws += static_cast<size_t>(N) * stat_size(a.logits);
  }
  p.workspace = ws;
  // No rows: nothing to launch for "none"; "sum"/"mean" still write their 0.
  if (N == 0 && p.reduction == Red::none) return Status::Ok();
  return core::dispatch(op, impls(), a.logits.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::fused_cross_entropy_ns

namespace recops {

Status fused_cross_entropy_shape(const FusedCrossEntropyArgs& a, Shape* loss_shape,
                                 DType* stat_dtype) {
  using namespace ops::fused_cross_entropy_ns;
  RECOPS_CHECK(a.logits.ndim == 2, kOp, ": logits must be [N, V]; got ", describe(a.logits));
  *loss_shape = a.reduction == CeReduction::none ? Shape{a.logits.sizes[0]} : Shape{};
  *stat_dtype = stat_dtype_of(a.logits);
  return Status::Ok();
}

size_t fused_cross_entropy_workspace_bytes(const FusedCrossEntropyArgs& a, bool with_lse_output) {
  using namespace ops::fused_cross_entropy_ns;
  if (a.logits.ndim != 2) return 0;
  const int64_t N = a.logits.sizes[0];
  int64_t elems = with_lse_output ? 0 : N;
  if (a.reduction != CeReduction::none) elems += 3 * N;
  return static_cast<size_t>(elems) * stat_size(a.logits);
}

Status fused_cross_entropy(const FusedCrossEntropyArgs& a, const TensorView& loss,
                           const TensorView& z_loss, const Context& ctx) {
  return ops::fused_cross_entropy_ns::forward(ops::fused_cross_entropy_ns::kOp, a, loss, z_loss,
                                              nullptr, ctx);
}

Status fused_cross_entropy_fwd(const FusedCrossEntropyArgs& a, const TensorView& loss,
                               const TensorView& z_loss, const TensorView& lse,
                               const Context& ctx) {
  return ops::fused_cross_entropy_ns::forward(ops::fused_cross_entropy_ns::kFwd, a, loss, z_loss,
                                              &lse, ctx);
}

size_t fused_cross_entropy_bwd_workspace_bytes(const FusedCrossEntropyBwdArgs& a) {
  using namespace ops::fused_cross_entropy_ns;
  return a.reduction == CeReduction::mean ? stat_size(a.logits) : 0;
}

Status fused_cross_entropy_bwd(const FusedCrossEntropyBwdArgs& a, const TensorView& grad_logits,
                               const Context& ctx) {
  using namespace ops::fused_cross_entropy_ns;
  RECOPS_RETURN_IF_ERROR(check_inputs(kBwd, a, a.logits, a.labels, a.weight));
  RECOPS_RETURN_IF_ERROR(ops::training::check_ce_labels(kBwd, a, a.labels, a.logits.sizes[1], ctx));
  const int64_t N = a.logits.sizes[0];
  const DType st = stat_dtype_of(a.logits);
  RECOPS_RETURN_IF_ERROR(
      ops::training::check_ce_grad_loss(kBwd, "logits", a.logits, a.grad_loss, a.reduction, N, st));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "logits", a.logits, "lse", a.lse));
  RECOPS_CHECK(a.lse.shape() == Shape{N} && a.lse.dtype == st && a.lse.is_contiguous(), kBwd,
               ": lse must be contiguous ", dtype_name(st), "[", N, "] (the forward's lse); got ",
               describe(a.lse));
  RECOPS_RETURN_IF_ERROR(
      check_like(kBwd, "grad_logits", grad_logits, a.logits, a.logits.shape(), a.logits.dtype));
  RECOPS_RETURN_IF_ERROR(
      ops::training::check_ce_workspace(kBwd, ctx, fused_cross_entropy_bwd_workspace_bytes(a)));
  Params p = params_of(a, a.logits, a.labels, a.weight);
  p.bwd = true;
  p.grad = a.grad_loss.data;
  p.lse = a.lse.data;
  p.out = grad_logits.data;
  p.workspace = ctx.workspace;
  if (N == 0) return Status::Ok();  // no rows: nothing to launch
  return core::dispatch(kBwd, impls(), a.logits.device.type, p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::fused_cross_entropy_ns {
namespace {
Status fwd_shapes_of(const FusedCrossEntropyArgs& a, bool with_lse,
                     std::vector<kit::OutSpec>* outs) {
  const char* op = with_lse ? kFwd : kOp;
  RECOPS_RETURN_IF_ERROR(check_inputs(op, a, a.logits, a.labels, a.weight));
  RECOPS_RETURN_IF_ERROR(check_modes(op, a));
  Shape ls;
  DType st;
  RECOPS_RETURN_IF_ERROR(fused_cross_entropy_shape(a, &ls, &st));
  outs->push_back({ls, st});
  outs->push_back({ls, st});
  if (with_lse) outs->push_back({{a.logits.sizes[0]}, st});
  return Status::Ok();
}
Status op_shapes(const FusedCrossEntropyArgs& a, std::vector<kit::OutSpec>* outs) {
  return fwd_shapes_of(a, false, outs);
}
Status fwd_shapes(const FusedCrossEntropyArgs& a, std::vector<kit::OutSpec>* outs) {
  return fwd_shapes_of(a, true, outs);
}
Status op_run(const FusedCrossEntropyArgs& a, const kit::Outputs& o, const Context& ctx) {
  return fused_cross_entropy(a, o.views[0], o.views[1], ctx);
}
Status fwd_run(const FusedCrossEntropyArgs& a, const kit::Outputs& o, const Context& ctx) {
  return fused_cross_entropy_fwd(a, o.views[0], o.views[1], o.views[2], ctx);
}
size_t op_workspace(const FusedCrossEntropyArgs& a, const kit::Outputs&) {
  return fused_cross_entropy_workspace_bytes(a, false);
}
size_t fwd_workspace(const FusedCrossEntropyArgs& a, const kit::Outputs&) {
  return fused_cross_entropy_workspace_bytes(a, true);
}
size_t bwd_workspace(const FusedCrossEntropyBwdArgs& a, const kit::Outputs&) {
  return fused_cross_entropy_bwd_workspace_bytes(a);
}

constexpr const char* kDoc = R"(Cross-entropy over the last dim of ``logits``, per token.

For each row i with ``labels[i] != ignore_index`` (logits first soft-capped to
``softcap * tanh(z / softcap)`` when ``softcap > 0``)::

    l_i = (1 - eps) * (lse_i - z[i, y_i]) + eps * (lse_i - mean_j z[i, j]) + z_loss_scale * lse_i**2

with ``eps = label_smoothing`` (torch's formula). Rows are weighted by ``weight[i]``.

Args:
    logits: ``[N, V]``, fp32, fp16 or bf16 (fp64 on the CPU).
    labels: ``[N]``, int32 or int64; each in ``[0, V)`` or ``ignore_index`` (checked on the CPU).
    weight: ``[N]`` per-token weight (fp32 or logits' dtype), or None (1).
    reduction: ``"none"`` (``[N]``), ``"sum"`` or ``"mean"`` (divided by the sum of the weights of
        the rows not ignored, computed on the device; 0 when that is 0, never NaN).
    precompute_grad, inplace: not implemented yet (refused when True).

Returns:
    ``(loss, z_loss)`` in fp32 (fp64 for fp64): z_loss is the weighted, reduced
    ``z_loss_scale * lse**2`` term alone, for logging (it gets no gradient of its own).

Statistics in fp32 (fp64 for fp64). Differentiable in logits (the op
``fused_cross_entropy_bwd``); double backward raises.
)";
}  // namespace
}  // namespace recops::ops::fused_cross_entropy_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::fused_cross_entropy_ns;
  using A = FusedCrossEntropyArgs;
  using B = FusedCrossEntropyBwdArgs;
  for (const char* op : {kOp, kFwd, kBwd})
    reg.add(OpInfo{op, "training", core::describe_impls(impls())});
  const kit::PyArg red_names{.names = "none sum mean"};
  for (const char* op : {kOp, kFwd}) {
    const bool main = op == kOp;
    kit::Def<A> d(op, "training");
    d.arg<&A::logits>("logits", {.grad = main, .dense_from = 0})
        .arg<&A::labels>("labels", {.dense_from = 0})
        .arg<&A::weight>("weight", {.def = "None", .dense_from = 0})
        .arg<&A::ignore_index>("ignore_index", {.def = "-100"})
        .arg<&A::label_smoothing>("label_smoothing", {.def = "0.0"})
        .arg<&A::z_loss_scale>("z_loss_scale", {.def = "0.0"})
        .arg<&A::softcap>("softcap", {.def = "0.0"})
        .arg<&A::reduction>("reduction", {.def = "2", .py = red_names})
        .arg<&A::precompute_grad>("precompute_grad", {.def = "False"})
        .arg<&A::inplace>("inplace", {.def = "False"})
        .out("loss", main)
        .out("z_loss", false);
    if (main) {
      d.shapes(op_shapes).run(op_run).workspace(op_workspace).backward(kBwd).doc("", kDoc);
      d.save_outputs({"lse"}, kFwd);  // the backward's lse, not recomputed
    } else {
      d.out("lse", false).shapes(fwd_shapes).run(fwd_run).workspace(fwd_workspace).doc("-", "");
    }
    reg.add(d);
  }
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::grad_loss>("grad_loss", {.dense_from = 0})
              .arg<&B::logits>("logits", {.dense_from = 0})
              .arg<&B::labels>("labels", {.dense_from = 0})
              .arg<&B::weight>("weight", {.dense_from = 0})  // no default: lse follows
              .arg<&B::lse>("lse", {.dense_from = 0})
              .arg<&B::ignore_index>("ignore_index", {.def = "-100"})
              .arg<&B::label_smoothing>("label_smoothing", {.def = "0.0"})
              .arg<&B::z_loss_scale>("z_loss_scale", {.def = "0.0"})
              .arg<&B::softcap>("softcap", {.def = "0.0"})
              .arg<&B::reduction>("reduction", {.def = "2", .py = red_names})
              .out_like("grad_logits", "logits")
              .shapes_like<&B::logits>()
              .run_one<&fused_cross_entropy_bwd>()
              .workspace(bwd_workspace)
              .doc("-", ""));
}
