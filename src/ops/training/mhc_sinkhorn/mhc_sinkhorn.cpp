// training/mhc_sinkhorn/mhc_sinkhorn.cpp: the entry. All validation happens here, once; then the
// ordered implementation list runs the first implementation that accepts. At the end: the
// registration (the OpInfos for `recops list` and the argument tables for the bindings).
#include "ops/training/mhc_sinkhorn/mhc_sinkhorn.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/mhc_sinkhorn/impls.h"

namespace recops::ops::mhc_sinkhorn_ns {
namespace {
constexpr const char* kOp = "mhc_sinkhorn";
constexpr const char* kBwd = "mhc_sinkhorn_bwd";
constexpr int64_t kMaxIters = 65536;

// cuda_sm80 (builds with CUDA), then the CPU ones.
const std::vector<core::Impl<Params>>& impls() {
  static const auto list = core::with_cpu_impls<Params>(
      {
#ifdef RECOPS_WITH_CUDA
          {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason, cuda_accepts, run_cuda},
#endif
      },
      run_cpu, run_reference);
  return list;
}

// logits and the scalars, shared by the forward and the backward.
Status check_logits(const char* op, const TensorView& logits, int64_t iters, double eps) {
  RECOPS_CHECK(logits.dtype == DType::fp32 || logits.dtype == DType::fp64, op,
               ": logits must be fp32 (or fp64), got ", dtype_name(logits.dtype));
  RECOPS_CHECK(logits.ndim >= 2, op, ": logits must have at least two dims ([..., n, n]), got ",
               describe(logits));
  RECOPS_CHECK(logits.size(-1) == logits.size(-2), op,
               ": logits' last two dims must be equal ([..., n, n]), got ", describe(logits));
  RECOPS_CHECK(logits.is_contiguous(), op, ": logits must be contiguous");
  // The backward keeps 2·iters - 1 matrices per thread; a bound keeps that allocation sane.
  RECOPS_CHECK(iters >= 1 && iters <= kMaxIters, op, ": iters must be >= 1 and <= ", kMaxIters,
               ", got ", iters);
  RECOPS_CHECK(std::isfinite(eps) && eps >= 0, op, ": eps must be finite and >= 0, got ", eps);
  return Status::Ok();
}

// A tensor `t` named `name` that must be contiguous with logits' shape, dtype and device.
Status check_like(const char* op, const char* name, const TensorView& t, const TensorView& logits) {
  RECOPS_CHECK(t.shape() == logits.shape() && t.dtype == logits.dtype && t.is_contiguous(), op,
               ": ", name, " must be contiguous, ", dtype_name(logits.dtype), " with shape ",
               shape_str(logits.shape()), "; got ", describe(t));
  RECOPS_CHECK(t.device == logits.device, op, ": ", name, " must be on logits' device (",
               describe(logits), "), got ", describe(t));
  return Status::Ok();
}

Status run(const char* op, const TensorView& logits, const TensorView* dP, int64_t iters,
           double eps, const TensorView& out, const Context& ctx) {
  Params p;
  p.logits = logits.data;
  p.dP = dP ? dP->data : nullptr;
  p.out = out.data;
  p.dtype = logits.dtype;
  p.n = logits.size(-1);
  p.tokens = logits.numel() == 0 ? 0 : logits.numel() / (p.n * p.n);
  p.iters = iters;
  p.eps = eps;
  p.backward = dP != nullptr;
  p.device_index = logits.device.index;
  if (p.tokens == 0) return Status::Ok();  // empty: nothing to run
  return core::dispatch(op, impls(), logits.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::mhc_sinkhorn_ns

namespace recops {

Status mhc_sinkhorn_shape(const MhcSinkhornArgs& a, Shape* out_shape) {
  using namespace ops::mhc_sinkhorn_ns;
  RECOPS_RETURN_IF_ERROR(check_logits(kOp, a.logits, a.iters, a.eps));
  *out_shape = a.logits.shape();
  return Status::Ok();
}

Status mhc_sinkhorn(const MhcSinkhornArgs& a, const TensorView& P, const Context& ctx) {
  using namespace ops::mhc_sinkhorn_ns;
  RECOPS_RETURN_IF_ERROR(check_logits(kOp, a.logits, a.iters, a.eps));
  RECOPS_RETURN_IF_ERROR(check_like(kOp, "P", P, a.logits));
  return run(kOp, a.logits, nullptr, a.iters, a.eps, P, ctx);
}

Status mhc_sinkhorn_bwd(const MhcSinkhornBwdArgs& a, const TensorView& dlogits,
                        const Context& ctx) {
  using namespace ops::mhc_sinkhorn_ns;
  RECOPS_RETURN_IF_ERROR(check_logits(kBwd, a.logits, a.iters, a.eps));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dP", a.dP, a.logits));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dlogits", dlogits, a.logits));
  return run(kBwd, a.logits, &a.dP, a.iters, a.eps, dlogits, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::mhc_sinkhorn_ns {
namespace {
constexpr const char* kDoc = R"(The Sinkhorn projection of DeepSeek V4's mHC combine matrix:
``P = softmax(logits, -1) + eps``, then ``P /= P.sum(-2) + eps``, then ``iters - 1`` rounds of
``P /= P.sum(-1) + eps; P /= P.sum(-2) + eps``.

Args:
    logits: ``[..., n, n]``, fp32 (fp64 accepted; the binding makes it contiguous).
    iters: >= 1 (DeepSeek V4: 20).
    eps: >= 0 (DeepSeek V4: 1e-6).

Returns:
    P, like ``logits`` (fp32 arithmetic for fp32, fp64 for fp64).

Differentiable in ``logits`` (the op ``mhc_sinkhorn_bwd``, which recomputes the iterates from
the logits and replays the steps in reverse). A NaN or +inf logit, or a row of -inf, makes that
matrix's P all NaN.
)";
}  // namespace
}  // namespace recops::ops::mhc_sinkhorn_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::mhc_sinkhorn_ns;
  using A = MhcSinkhornArgs;
  using B = MhcSinkhornBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::logits>("logits", {.grad = true, .dense_from = 0})
              .arg<&A::iters>("iters", {.def = "20"})
              .arg<&A::eps>("eps", {.def = "1e-06"})
              .out_like("P", "logits")
              .shapes_from<&mhc_sinkhorn_shape, &A::logits>()
              .run_one<&mhc_sinkhorn>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::dP>("dP", {.dense_from = 0})
              .arg<&B::logits>("logits", {.dense_from = 0})
              .arg<&B::iters>("iters", {.def = "20"})
              .arg<&B::eps>("eps", {.def = "1e-06"})
              .out_like("dlogits", "logits")
              .shapes_like<&B::logits>()
              .run_one<&mhc_sinkhorn_bwd>()
              .doc("-", ""));
}
