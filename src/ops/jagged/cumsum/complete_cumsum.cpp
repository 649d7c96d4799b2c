// complete_cumsum, exclusive_cumsum, inclusive_cumsum: the entries (jagged_ops.md §2.8).
#include <string>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/cumsum/impls.h"
#include "recops/jagged.h"

namespace recops::ops {
namespace {
using P = CumsumParams;

const std::vector<core::Impl<P>>& impls() {
  static const std::vector<core::Impl<P>> list = {
#ifdef RECOPS_WITH_CUDA
      {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason,
       core::cuda_capability_at_least<80, P>, cumsum_cuda},
#endif
      {"cpu_generic", DeviceType::cpu, core::always_available, core::accept_all<P>, cumsum_cpu},
      {"reference", DeviceType::cpu, core::always_available, core::accept_all<P>, cumsum_reference},
  };
  return list;
}

const char* op_name(CumsumKind k) {
  return k == CumsumKind::complete    ? "complete_cumsum"
         : k == CumsumKind::exclusive ? "exclusive_cumsum"
                                      : "inclusive_cumsum";
}

bool is_index_dtype(DType t) {
  return t == DType::int32 || t == DType::int64;
}

// Validation and params shared by the three ops.
Status make_params(CumsumKind kind, const TensorView& t, const TensorView& out, P* p) {
  const char* op = op_name(kind);
  RECOPS_CHECK(is_index_dtype(t.dtype), op, ": t must be int32 or int64, got ",
               dtype_name(t.dtype));
  RECOPS_CHECK(is_index_dtype(out.dtype), op, ": out (out_dtype) must be int32 or int64, got ",
               dtype_name(out.dtype));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "t", t, "out", out));
  p->in = t.data;
  p->out = out.data;
  p->in_int64 = t.dtype == DType::int64;
  p->out_int64 = out.dtype == DType::int64;
  p->kind = kind;
  p->device_index = t.device.index;
  if (kind == CumsumKind::complete) {
    Shape expect;
    RECOPS_RETURN_IF_ERROR(complete_cumsum_shape(t, &expect));
    RECOPS_CHECK(out.shape() == expect, op, ": out has shape ", shape_str(out.shape()),
                 ", expected ", shape_str(expect));
    RECOPS_CHECK(out.ndim == 0 || out.strides[out.ndim - 1] == 1 || out.sizes[out.ndim - 1] <= 1,
                 op, ": out's last dim must have stride 1");
    p->R = t.ndim == 2 ? t.sizes[0] : 1;
    p->n = t.sizes[t.ndim - 1];
    p->in_stride = t.strides[t.ndim - 1];
    p->in_row_stride = t.ndim == 2 ? t.strides[0] : 0;
    p->out_row_stride = out.ndim == 2 ? out.strides[0] : 0;
  } else {
    // FBGEMM semantics: the scan runs over the flattened tensor.
    RECOPS_CHECK(out.shape() == t.shape(), op, ": out has shape ", shape_str(out.shape()),
                 ", expected t's shape ", shape_str(t.shape()));
    RECOPS_CHECK(t.ndim <= 1 || t.is_contiguous(), op,
                 ": t must be contiguous when it has more than one dim (the scan is over the "
                 "flattened tensor)");
    RECOPS_CHECK(out.is_contiguous(), op, ": out must be contiguous");
    p->R = 1;
    p->n = t.numel();
    p->in_stride = t.ndim == 1 ? t.strides[0] : 1;
    p->in_row_stride = 0;
    p->out_row_stride = 0;
  }
  return Status::Ok();
}

Status run(CumsumKind kind, const TensorView& t, const TensorView& out, const Context& ctx) {
  P p;
  RECOPS_RETURN_IF_ERROR(make_params(kind, t, out, &p));
  if (out.numel() == 0) return Status::Ok();
  p.validate =
      t.device.is_cpu() || (validate_enabled() && !core::cuda::stream_capturing(ctx.stream));
#ifdef RECOPS_WITH_CUDA
  if (t.device.is_cuda()) {
    const size_t need = cumsum_cuda_workspace_bytes(p);
    RECOPS_CHECK(ctx.workspace_bytes >= need, op_name(kind), ": the CUDA scan needs ", need,
                 " bytes of workspace (cumsum_workspace_bytes), got ", ctx.workspace_bytes);
  }
#endif
  return core::dispatch(op_name(kind), impls(), t.device.type, p, ctx);
}
}  // namespace

OpInfo complete_cumsum_info() {
  return {"complete_cumsum", "jagged", core::describe_impls(impls())};
}
OpInfo exclusive_cumsum_info() {
  return {"exclusive_cumsum", "jagged", core::describe_impls(impls())};
}
OpInfo inclusive_cumsum_info() {
  return {"inclusive_cumsum", "jagged", core::describe_impls(impls())};
}

}  // namespace recops::ops

namespace recops {

Status complete_cumsum_shape(const TensorView& t, Shape* out_shape) {
  RECOPS_CHECK(t.ndim == 1 || t.ndim == 2, "complete_cumsum: t must be 1-D [n] or 2-D [R, n], got ",
               t.ndim, "-D ", describe(t));
  Shape s = t.shape();
  s.back() += 1;
  *out_shape = std::move(s);
  return Status::Ok();
}

Status complete_cumsum(const TensorView& t, const TensorView& out, const Context& ctx) {
  return ops::run(ops::CumsumKind::complete, t, out, ctx);
}
Status exclusive_cumsum(const TensorView& t, const TensorView& out, const Context& ctx) {
  return ops::run(ops::CumsumKind::exclusive, t, out, ctx);
}
Status inclusive_cumsum(const TensorView& t, const TensorView& out, const Context& ctx) {
  return ops::run(ops::CumsumKind::inclusive, t, out, ctx);
}

size_t cumsum_workspace_bytes(const TensorView& t, const TensorView& out) {
#ifdef RECOPS_WITH_CUDA
  if (!t.device.is_cuda()) return 0;
  ops::CumsumParams p;
  const auto kind = out.numel() == t.numel() && out.shape() == t.shape()
                        ? ops::CumsumKind::inclusive  // exclusive and inclusive need the same
                        : ops::CumsumKind::complete;
  if (!ops::make_params(kind, t, out, &p).ok()) return 0;
  return ops::cumsum_cuda_workspace_bytes(p);
#else
  (void)t;
  (void)out;
  return 0;
#endif
}

}  // namespace recops

RECOPS_REGISTER_OPS(reg) {
  reg.add(recops::ops::complete_cumsum_info());
  reg.add(recops::ops::exclusive_cumsum_info());
  reg.add(recops::ops::inclusive_cumsum_info());
}
