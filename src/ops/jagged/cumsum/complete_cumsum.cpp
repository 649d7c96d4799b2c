// complete_cumsum, exclusive_cumsum, inclusive_cumsum: the entries (jagged_ops.md §2.8).
#include <optional>
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
  static const auto list =
      core::standard_impls<P>(RECOPS_IF_CUDA(cumsum_cuda), cumsum_cpu, cumsum_reference);
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

// ---- the argument tables (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
struct Args {
  TensorView t;                    // complete: [n] or [R, n]; exclusive/inclusive: any shape
  std::optional<DType> out_dtype;  // nullopt: t's dtype
};

// complete: [n] -> [n+1], [R, n] -> [R, n+1]; exclusive and inclusive keep t's shape. The dtype
// rules are checked here too (with the entry's words), so that Meta refuses what the entry would.
template <CumsumKind K>
Status shapes(const Args& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  if (K == CumsumKind::complete) {
    RECOPS_RETURN_IF_ERROR(complete_cumsum_shape(a.t, &s));
  } else {
    s = a.t.shape();
  }
  const DType dt = a.out_dtype.value_or(a.t.dtype);
  RECOPS_CHECK(is_index_dtype(a.t.dtype), op_name(K), ": t must be int32 or int64, got ",
               dtype_name(a.t.dtype));
  RECOPS_CHECK(is_index_dtype(dt), op_name(K), ": out (out_dtype) must be int32 or int64, got ",
               dtype_name(dt));
  outs->push_back({s, dt});
  return Status::Ok();
}

template <CumsumKind K>
Status run_kind(const Args& a, const kit::Outputs& o, const Context& ctx) {
  return run(K, a.t, o.views[0], ctx);
}

// The CUDA scan's scratch (0 on the CPU).
size_t workspace(const Args& a, const kit::Outputs& o) {
  return cumsum_workspace_bytes(a.t, o.views[0]);
}

constexpr const char* kCompleteDoc =
    R"(Offsets from lengths: ``[n] -> [n+1]`` (or ``[R, n] -> [R, n+1]`` row by row), with
``out[0] = 0`` and ``out[i+1] = out[i] + t[i]``.

``t`` is int32 or int64; ``out_dtype`` (int32 or int64) defaults to t's dtype. Sums accumulate
in int64; an int32 result that overflows raises (CPU always, CUDA with validation on).
Not differentiable. FBGEMM's name: ``asynchronous_complete_cumsum``.
)";

constexpr const char* kExclusiveDoc =
    R"(``out[i] = sum(t[j] for j < i)`` over the flattened tensor; same shape as ``t``.

int32/int64 in and out (``out_dtype`` defaults to t's dtype); int32 overflow raises as in
``complete_cumsum``. Not differentiable. FBGEMM's name: ``asynchronous_exclusive_cumsum``.
)";

constexpr const char* kInclusiveDoc =
    R"(``out[i] = sum(t[j] for j <= i)`` over the flattened tensor; same shape as ``t``.

int32/int64 in and out (``out_dtype`` defaults to t's dtype); int32 overflow raises as in
``complete_cumsum``. Not differentiable. FBGEMM's name: ``asynchronous_inclusive_cumsum``.
)";

// One table of the family: `name` runs kind K. complete takes t with any strides; exclusive and
// inclusive scan the flattened tensor, so a t of more than one dim is made contiguous (1-D ones
// keep their stride). Not differentiable: no grad arguments, no backward.
template <CumsumKind K>
kit::OpDef cumsum_def(const char* name, const char* python_name, const char* doc) {
  const kit::ArgOpts t_opts = K == CumsumKind::complete
                                  ? kit::ArgOpts{}
                                  : kit::ArgOpts{.dense_from = 0, .dense_if_ndim_gt = 1};
  return kit::Def<Args>(name, "jagged")
      .arg<&Args::t>("t", t_opts)
      .arg<&Args::out_dtype>("out_dtype", {.def = "None"})
      .out("out", false)
      .shapes(shapes<K>)
      .run(run_kind<K>)
      .workspace(workspace)
      .doc(python_name, doc);
}
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using recops::ops::cumsum_def;
  using recops::ops::CumsumKind;
  reg.add(recops::ops::complete_cumsum_info());
  reg.add(recops::ops::exclusive_cumsum_info());
  reg.add(recops::ops::inclusive_cumsum_info());
  reg.add(cumsum_def<CumsumKind::complete>("complete_cumsum", "", recops::ops::kCompleteDoc));
  reg.add(cumsum_def<CumsumKind::exclusive>("exclusive_cumsum", "", recops::ops::kExclusiveDoc));
  reg.add(cumsum_def<CumsumKind::inclusive>("inclusive_cumsum", "", recops::ops::kInclusiveDoc));
  // FBGEMM's names (torch.ops.recops.asynchronous_*), the same ops without a Python wrapper.
  reg.add(cumsum_def<CumsumKind::complete>("asynchronous_complete_cumsum", "-", ""));
  reg.add(cumsum_def<CumsumKind::exclusive>("asynchronous_exclusive_cumsum", "-", ""));
  reg.add(cumsum_def<CumsumKind::inclusive>("asynchronous_inclusive_cumsum", "-", ""));
}
