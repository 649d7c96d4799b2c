// training/chunk_loss/chunk_loss.cpp: the entry of chunk_loss, chunk_loss_fwd and chunk_loss_bwd.
// All validation happens here, once (label values on the CPU); the chunking and the workspace
// layout are chosen here; then the ordered implementation list runs the first implementation that
// accepts. At the end: the OpInfos and the argument tables.
#include "ops/training/chunk_loss/chunk_loss.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_loss/impls.h"
#include "ops/training/common/ce_entry.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/common/row_norm_entry.h"

namespace recops::ops::chunk_loss_ns {
namespace {
using training::check_like;
using training::is_float;

constexpr const char* kOp = "chunk_loss";
constexpr const char* kFwd = "chunk_loss_fwd";
constexpr const char* kBwd = "chunk_loss_bwd";
constexpr size_t kMinBudget = size_t{64} << 20;  // 64 MiB (training_ops.md §3.2)
// CUDA, chunks whose pieces live in d_weight (params.h): at most this many rows. The logit GEMM
// reads all of W once per chunk, so it is bound by that read below about 300 rows on Hopper (H100:
// ~990 dense bf16 TFLOP/s over 3.35 TB/s), and the fp32 dW accumulator is read and written once per
// chunk; 1024 rows (16 chunks at N = 16384) make both small against the 6·N·D·V flops.
constexpr int64_t kCudaMaxRows = 1024;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      training::row_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

DType stat_dtype_of(DType t) {
  return t == DType::fp64 ? DType::fp64 : DType::fp32;
}

Status check_inputs(const char* op, const ChunkLossArgs& a) {
  const TensorView &h = a.hidden, &w = a.weight;
  RECOPS_CHECK(is_float(h.dtype), op, ": hidden must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(h.dtype));
  RECOPS_CHECK(h.ndim == 2 && h.sizes[1] >= 1 && h.is_contiguous(), op,
               ": hidden must be contiguous [N, D] with D >= 1; got ", describe(h));
  const int64_t N = h.sizes[0], D = h.sizes[1];
  RECOPS_CHECK(w.dtype == h.dtype, op, ": weight must have hidden's dtype (", dtype_name(h.dtype),
               "); got ", dtype_name(w.dtype));
  RECOPS_CHECK(w.ndim == 2 && w.sizes[0] >= 1 && w.sizes[1] == D && w.is_contiguous(), op,
               ": weight must be contiguous [V, D] with V >= 1 and D = ", D,
               " (hidden's last dim); got ", describe(w));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "hidden", h, "weight", w));
  const int64_t V = w.sizes[0];
  RECOPS_CHECK(a.labels.dtype == DType::int32 || a.labels.dtype == DType::int64, op,
               ": labels must be int32 or int64, got ", dtype_name(a.labels.dtype));
  RECOPS_CHECK(a.labels.ndim == 1 && a.labels.sizes[0] == N && a.labels.is_contiguous(), op,
               ": labels must be contiguous [N] = [", N, "] (hidden's rows); got ",
               describe(a.labels));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "hidden", h, "labels", a.labels));
  if (a.bias) {
    const TensorView& b = *a.bias;
    RECOPS_CHECK(b.dtype == h.dtype, op, ": bias must have hidden's dtype (", dtype_name(h.dtype),
                 "); got ", dtype_name(b.dtype));
    RECOPS_CHECK(b.ndim == 1 && b.sizes[0] == V && b.is_contiguous(), op,
                 ": bias must be contiguous [V] = [", V, "] (weight's rows); got ", describe(b));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "hidden", h, "bias", b));
  }
  if (a.token_weight) {
    const TensorView& t = *a.token_weight;
    RECOPS_CHECK(t.dtype == DType::fp32 || t.dtype == h.dtype, op,
                 ": token_weight must be fp32 or hidden's dtype (", dtype_name(h.dtype), "); got ",
                 dtype_name(t.dtype));
    RECOPS_CHECK(t.ndim == 1 && t.sizes[0] == N && t.is_contiguous(), op,
                 ": token_weight must be contiguous [N] = [", N, "] (hidden's rows); got ",
                 describe(t));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "hidden", h, "token_weight", t));
  }
  RECOPS_RETURN_IF_ERROR(training::check_ce_scalars(op, a));
  RECOPS_CHECK(a.token_chunk >= 0, op, ": token_chunk=", a.token_chunk,
               " must be >= 0 (0: from the workspace budget)");
  RECOPS_CHECK(a.vocab_chunk >= 0, op, ": vocab_chunk=", a.vocab_chunk,
               " must be >= 0 (0: no vocab tiling)");
  const DType st = stat_dtype_of(h.dtype);
  RECOPS_CHECK(!a.accum_dtype || *a.accum_dtype == st || *a.accum_dtype == h.dtype, op,
               ": accum_dtype must be None, ", dtype_name(st), " or hidden's dtype (",
               dtype_name(h.dtype), "); got ", dtype_name(*a.accum_dtype));
  return Status::Ok();
}

Params params_of(const ChunkLossArgs& a, bool bwd) {
  Params p;
  p.bwd = bwd;
  p.hidden = a.hidden.data;
  p.weight = a.weight.data;
  p.bias = a.bias ? a.bias->data : nullptr;
  p.labels = a.labels.data;
  p.token_weight = a.token_weight ? a.token_weight->data : nullptr;
  p.tw_dtype = a.token_weight ? a.token_weight->dtype : DType::fp32;
  p.labels_int64 = a.labels.dtype == DType::int64;
  p.dtype = a.hidden.dtype;
  p.accum_low = a.accum_dtype && *a.accum_dtype == a.hidden.dtype &&
                *a.accum_dtype != stat_dtype_of(a.hidden.dtype);
  p.host = a.hidden.device.is_cpu();
  p.reduction = static_cast<Red>(static_cast<int>(a.reduction));
  p.N = a.hidden.sizes[0];
  p.D = a.hidden.sizes[1];
  p.V = a.weight.sizes[0];
  ChunkLossPlan plan;
  (void)chunk_loss_plan(a, &plan, bwd);
  p.Nc = plan.Nc;
  p.Vc = plan.Vc;
  p.ignore_index = a.ignore_index;
  p.label_smoothing = a.label_smoothing;
  p.z_loss_scale = a.z_loss_scale;
  p.softcap = a.softcap;
  p.device_index = a.hidden.device.index;
  return p;
}

bool shapes_ok(const ChunkLossArgs& a) {
  return a.hidden.ndim == 2 && a.weight.ndim == 2 && a.weight.sizes[0] >= 1 &&
         a.hidden.sizes[1] >= 1 && a.weight.sizes[1] == a.hidden.sizes[1];
}
}  // namespace
}  // namespace recops::ops::chunk_loss_ns

namespace recops {

// Vc = vocab_chunk (capped at V), else V. Nc = token_chunk (capped at N), else:
// - CUDA, with gradients accumulated in fp32 (not accum_dtype = input): the most rows, at most
//   kCudaMaxRows, whose chunk pieces (params.h's Layout) fit in d_weight, which holds them (they
//   then take no memory of their own); when not even 64 rows fit (D below about 128 in 16 bits,
//   64 in fp32, for a large V, in the compact layout), as below;
// - CUDA without gradients (the forward alone), or with gradients accumulated in the input dtype
//   (accum_dtype = input), vocab_chunk = 0: min(N, kCudaMaxRows) rows when their Z tile over all
//   of V does not fit the budget max(N·D·s, 64 MiB), with the vocabulary cut into equal tiles (Vc
//   a multiple of 256) that do, together with the rows' fp32 dh accumulators (D·a per row) when
//   there are gradients: each chunk's GEMMs read all of W (and, with gradients, read and write
//   all of d_weight), so rows come first; the forward merges the tiles' lse with no second pass;
// - else the most rows whose tiles fit that budget: on the CPU Z (G in place), Vc·a, the hidden
//   chunk, D·a, and with gradients the dh accumulator, D·a, per row; on CUDA Z with G in place,
//   Vc·a, and with vocab tiles the dh accumulator, D·a (no gradients: Z alone);
// rounded down to a multiple of 64 when at least 64, at least 1.
Status chunk_loss_plan(const ChunkLossArgs& a, ChunkLossPlan* plan, bool grads) {
  using namespace ops::chunk_loss_ns;
  *plan = {};
  if (!shapes_ok(a)) return Status(StatusCode::invalid_argument, "chunk_loss: bad shapes");
  const int64_t N = a.hidden.sizes[0], D = a.hidden.sizes[1], V = a.weight.sizes[0];
  const int64_t s = static_cast<int64_t>(dtype_size(a.hidden.dtype));
  const int64_t acc = a.hidden.dtype == DType::fp64 ? 8 : 4;
  plan->Vc = a.vocab_chunk > 0 ? std::min(a.vocab_chunk, V) : V;
  if (N == 0) return Status::Ok();
  if (a.token_chunk > 0) {
    plan->Nc = std::min(a.token_chunk, N);
    return Status::Ok();
  }
  const bool cuda = !a.hidden.device.is_cpu();
  const bool low = a.accum_dtype && *a.accum_dtype == a.hidden.dtype &&
                   *a.accum_dtype != stat_dtype_of(a.hidden.dtype);
  if (cuda && grads && !low) {
    Params q;  // the layout's view of a chunk of c rows
    q.bwd = true;
    q.host = false;
    q.dtype = a.hidden.dtype;
    q.N = N;
    q.D = D;
    q.V = V;
    q.Vc = plan->Vc;
    for (int64_t c = std::min(N, kCudaMaxRows) / 64 * 64; c >= 64; c -= 64) {
      q.Nc = c;
      if (layout_of(q).in_dw) {
        plan->Nc = c;
        return Status::Ok();
      }
    }
  }
  // The plan answers any sizes (it reads no data): the products saturate at INT64_MAX.
  const int64_t budget =
      std::max<int64_t>(ops::training::extent_product({N, D, s}), static_cast<int64_t>(kMinBudget));
  if (cuda && (!grads || low) && a.vocab_chunk <= 0) {
    const int64_t rows = std::min(N, kCudaMaxRows);
    if (ops::training::extent_product({rows, V, acc}) > budget) {
      // budget >= 64 MiB and rows <= 1024: budget / (rows·acc) >= 16384 (fp32 statistics). With
      // gradients each row also holds its dh accumulator (D·acc: vocab tiles, compact layout).
      const int64_t cols = budget / (rows * acc) - (grads ? D : 0);
      const int64_t vmax = cols / 256 * 256;
      if (vmax >= 256) {
        const int64_t tiles = (V - 1) / vmax + 1;  // V >= 1; no overflow for any V
        plan->Vc = std::min(V, ((V - 1) / tiles + 1 + 255) / 256 * 256);
        plan->Nc = rows;
        return Status::Ok();
      }
    }
  }
  int64_t per_row = 0;
  if (cuda && !grads)
    per_row = ops::training::extent_product({plan->Vc, acc});
  else if (cuda) {  // Z with G in place; the fp32 dh accumulator only with vocab tiles
    int64_t cols = plan->Vc;
    if (plan->Vc < V && __builtin_add_overflow(plan->Vc, D, &cols)) cols = INT64_MAX;
    per_row = ops::training::extent_product({cols, acc});
  } else if (__builtin_add_overflow(ops::training::extent_product({plan->Vc, acc}),
                                    ops::training::extent_product({grads ? 2 : 1, D, acc}),
                                    &per_row)) {
    per_row = INT64_MAX;
  }
  int64_t nc = budget / per_row;
  if (nc >= 64) nc = nc / 64 * 64;
  plan->Nc = std::min(N, std::max<int64_t>(1, nc));
  return Status::Ok();
}

Status chunk_loss_shape(const ChunkLossArgs& a, Shape* loss_shape, DType* stat_dtype) {
  using namespace ops::chunk_loss_ns;
  RECOPS_CHECK(a.hidden.ndim == 2, kOp, ": hidden must be [N, D]; got ", describe(a.hidden));
  *loss_shape = a.reduction == CeReduction::none ? Shape{a.hidden.sizes[0]} : Shape{};
  *stat_dtype = stat_dtype_of(a.hidden.dtype);
  return Status::Ok();
}

size_t chunk_loss_workspace_bytes(const ChunkLossArgs& a) {
  using namespace ops::chunk_loss_ns;
  if (!shapes_ok(a)) return 0;
  return layout_of(params_of(a, false)).total;
}

// The backward's layout for "sum" and "mean" (the fused run), the forward's for "none".
size_t chunk_loss_fwd_workspace_bytes(const ChunkLossArgs& a) {
  using namespace ops::chunk_loss_ns;
  if (!shapes_ok(a)) return 0;
  return layout_of(params_of(a, a.reduction != CeReduction::none)).total;
}

size_t chunk_loss_bwd_workspace_bytes(const ChunkLossBwdArgs& a) {
  using namespace ops::chunk_loss_ns;
  if (!shapes_ok(a)) return 0;
  return layout_of(params_of(a, true)).total;
}

namespace {
using namespace ops::chunk_loss_ns;

// chunk_loss, and chunk_loss_fwd (op kFwd) with its gradients dh, dw, db (present for "sum" and
// "mean"; see chunk_loss.h).
Status forward(const char* op, const ChunkLossArgs& a, const TensorView& loss,
               const TensorView& z_loss, const TensorView* dh, const TensorView* dw,
               const TensorView* db, const Context& ctx, bool plain) {
  RECOPS_RETURN_IF_ERROR(check_inputs(op, a));
  Shape ls;
  DType st;
  RECOPS_RETURN_IF_ERROR(chunk_loss_shape(a, &ls, &st));
  RECOPS_RETURN_IF_ERROR(ops::training::check_ce_labels(op, a, a.labels, a.weight.sizes[0], ctx));
  RECOPS_RETURN_IF_ERROR(check_like(op, "loss", loss, a.hidden, ls, st));
  RECOPS_RETURN_IF_ERROR(check_like(op, "z_loss", z_loss, a.hidden, ls, st));
  const bool is_fwd = std::string_view(op) == kFwd;
  const bool fused = is_fwd && a.reduction != CeReduction::none;
  if (is_fwd) {
    RECOPS_CHECK((dh != nullptr) == fused && (dw != nullptr) == fused, op,
                 ": d_hidden and d_weight must be given exactly when reduction is sum or mean");
    RECOPS_CHECK((db != nullptr) == (fused && a.bias.has_value()), op,
                 ": d_bias must be given exactly when bias is given and reduction is sum or mean");
  }
  if (fused) {
    RECOPS_RETURN_IF_ERROR(
        check_like(op, "d_hidden", *dh, a.hidden, a.hidden.shape(), a.hidden.dtype));
    RECOPS_RETURN_IF_ERROR(
        check_like(op, "d_weight", *dw, a.hidden, a.weight.shape(), a.weight.dtype));
    if (db)
      RECOPS_RETURN_IF_ERROR(
          check_like(op, "d_bias", *db, a.hidden, a.bias->shape(), a.bias->dtype));
  }
  Params p = params_of(a, fused);
  p.fused = fused;
  p.plain = plain;
  p.loss = loss.data;
  p.z_loss = z_loss.data;
  if (fused) {  // grad stays nullptr: a unit upstream gradient
    p.dh = dh->data;
    p.dw = dw->data;
    p.db = db ? db->data : nullptr;
  }
  if (!plain) {
    RECOPS_RETURN_IF_ERROR(ops::training::check_ce_workspace(op, ctx, layout_of(p).total));
    p.workspace = ctx.workspace;
  }
  // No rows: nothing to launch for "none"; "sum"/"mean" still write their 0.
  if (p.N == 0 && p.reduction == Red::none) return Status::Ok();
  if (plain) return run_reference(p, ctx);
  return core::dispatch(op, impls(), a.hidden.device.type, p, ctx);
}

Status backward(const ChunkLossBwdArgs& a, const TensorView& dh, const TensorView& dw,
                const TensorView* db, const Context& ctx, bool plain) {
  RECOPS_RETURN_IF_ERROR(check_inputs(kBwd, a));
  RECOPS_RETURN_IF_ERROR(ops::training::check_ce_labels(kBwd, a, a.labels, a.weight.sizes[0], ctx));
  RECOPS_RETURN_IF_ERROR(ops::training::check_ce_grad_loss(kBwd, "hidden", a.hidden, a.grad_loss,
                                                           a.reduction, a.hidden.sizes[0],
                                                           stat_dtype_of(a.hidden.dtype)));
  RECOPS_RETURN_IF_ERROR(
      check_like(kBwd, "d_hidden", dh, a.hidden, a.hidden.shape(), a.hidden.dtype));
  RECOPS_RETURN_IF_ERROR(
      check_like(kBwd, "d_weight", dw, a.hidden, a.weight.shape(), a.weight.dtype));
  const bool want_db = a.bias && a.want_dbias;
  RECOPS_CHECK((db != nullptr) == want_db, kBwd,
               ": d_bias must be given exactly when bias is given and want_dbias is true");
  if (db)
    RECOPS_RETURN_IF_ERROR(
        check_like(kBwd, "d_bias", *db, a.hidden, a.bias->shape(), a.bias->dtype));
  Params p = params_of(a, true);
  p.plain = plain;
  p.grad = a.grad_loss.data;
  p.dh = dh.data;
  p.dw = dw.data;
  p.db = db ? db->data : nullptr;
  if (!plain) {
    RECOPS_RETURN_IF_ERROR(ops::training::check_ce_workspace(kBwd, ctx, layout_of(p).total));
    p.workspace = ctx.workspace;
  }
  if (plain) return run_reference(p, ctx);
  return core::dispatch(kBwd, impls(), a.hidden.device.type, p, ctx);
}
}  // namespace

Status chunk_loss(const ChunkLossArgs& a, const TensorView& loss, const TensorView& z_loss,
                  const Context& ctx) {
  return forward(kOp, a, loss, z_loss, nullptr, nullptr, nullptr, ctx, false);
}

Status chunk_loss_fwd(const ChunkLossArgs& a, const TensorView& loss, const TensorView& z_loss,
                      const TensorView* d_hidden, const TensorView* d_weight,
                      const TensorView* d_bias, const Context& ctx) {
  return forward(kFwd, a, loss, z_loss, d_hidden, d_weight, d_bias, ctx, false);
}

Status chunk_loss_bwd(const ChunkLossBwdArgs& a, const TensorView& d_hidden,
                      const TensorView& d_weight, const TensorView* d_bias, const Context& ctx) {
  return backward(a, d_hidden, d_weight, d_bias, ctx, false);
}

Status chunk_loss_plain(const ChunkLossArgs& a, const TensorView& loss, const TensorView& z_loss) {
  RECOPS_CHECK(a.hidden.device.is_cpu(), "chunk_loss_plain: CPU tensors only");
  return forward(kOp, a, loss, z_loss, nullptr, nullptr, nullptr, {}, true);
}

Status chunk_loss_bwd_plain(const ChunkLossBwdArgs& a, const TensorView& d_hidden,
                            const TensorView& d_weight, const TensorView* d_bias) {
  RECOPS_CHECK(a.hidden.device.is_cpu(), "chunk_loss_bwd_plain: CPU tensors only");
  return backward(a, d_hidden, d_weight, d_bias, {}, true);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::chunk_loss_ns {
namespace {
Status op_shapes(const ChunkLossArgs& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_inputs(kOp, a));
  Shape ls;
  DType st;
  RECOPS_RETURN_IF_ERROR(chunk_loss_shape(a, &ls, &st));
  outs->push_back({ls, st});
  outs->push_back({ls, st});
  return Status::Ok();
}
Status op_run(const ChunkLossArgs& a, const kit::Outputs& o, const Context& ctx) {
  return chunk_loss(a, o.views[0], o.views[1], ctx);
}
size_t op_workspace(const ChunkLossArgs& a, const kit::Outputs&) {
  return chunk_loss_workspace_bytes(a);
}
// chunk_loss_fwd: loss, z_loss, then d_hidden, d_weight, d_bias (absent, [0], for "none"; d_bias
// also without bias).
Status fwd_shapes(const ChunkLossArgs& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_inputs(kFwd, a));
  Shape ls;
  DType st;
  RECOPS_RETURN_IF_ERROR(chunk_loss_shape(a, &ls, &st));
  const bool grads = a.reduction != CeReduction::none, want_db = grads && a.bias;
  outs->push_back({ls, st});
  outs->push_back({ls, st});
  outs->push_back({grads ? a.hidden.shape() : Shape{0}, a.hidden.dtype, grads});
  outs->push_back({grads ? a.weight.shape() : Shape{0}, a.hidden.dtype, grads});
  outs->push_back({want_db ? a.bias->shape() : Shape{0}, a.hidden.dtype, want_db});
  return Status::Ok();
}
Status fwd_run(const ChunkLossArgs& a, const kit::Outputs& o, const Context& ctx) {
  return chunk_loss_fwd(a, o.views[0], o.views[1], o.get(2), o.get(3), o.get(4), ctx);
}
size_t fwd_workspace(const ChunkLossArgs& a, const kit::Outputs&) {
  return chunk_loss_fwd_workspace_bytes(a);
}
Status bwd_shapes(const ChunkLossBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_inputs(kBwd, a));
  const bool want_db = a.bias && a.want_dbias;
  outs->push_back({a.hidden.shape(), a.hidden.dtype});
  outs->push_back({a.weight.shape(), a.weight.dtype});
  outs->push_back({want_db ? a.bias->shape() : Shape{0}, a.hidden.dtype, want_db});
  return Status::Ok();
}
Status bwd_run(const ChunkLossBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return chunk_loss_bwd(a, o.views[0], o.views[1], o.get(2), ctx);
}
size_t bwd_workspace(const ChunkLossBwdArgs& a, const kit::Outputs&) {
  return chunk_loss_bwd_workspace_bytes(a);
}

constexpr const char* kDoc = R"(Fused linear cross-entropy: ``fused_cross_entropy`` of
``hidden @ weight.T (+ bias)`` without ever storing the ``[N, V]`` logits.

Token chunks of ``token_chunk`` rows (0: as many as a workspace of
``max(N * D * itemsize, 64 MiB)`` holds) and, with ``vocab_chunk > 0``, vocab tiles of that many
columns go through the loss of ``fused_cross_entropy`` (per row not ignored, logits soft-capped when
``softcap > 0``)::

    l_i = (1 - eps) * (lse_i - z[i, y_i]) + eps * (lse_i - mean_j z[i, j]) + z_loss_scale * lse_i**2

Args:
    hidden: ``[N, D]``, fp32, fp16 or bf16 (fp64 on the CPU).
    weight: ``[V, D]`` (the LM head), hidden's dtype.
    labels: ``[N]``, int32 or int64; each in ``[0, V)`` or ``ignore_index`` (checked on the CPU).
    bias: ``[V]`` of hidden's dtype, or None.
    token_weight: ``[N]`` per-token weight (fp32 or hidden's dtype), or None (1).
    reduction: ``"none"`` (``[N]``), ``"sum"`` or ``"mean"`` (divided by the summed weight of the
        rows not ignored; 0 when that is 0, never NaN).
    accum_dtype: None (fp32) or hidden's dtype (dW and db accumulated across token chunks in it).

Returns:
    ``(loss, z_loss)`` in fp32 (fp64 for fp64); z_loss is the weighted, reduced
    ``z_loss_scale * lse**2`` term alone, for logging (no gradient of its own).

Differentiable in hidden, weight and bias; double backward raises. When a gradient is needed and
reduction is ``"sum"`` or ``"mean"``, the forward computes the gradients for a unit upstream
gradient in the same pass over the logits (the op ``chunk_loss_fwd``, as Liger's fused linear
cross-entropy does) and the backward scales them; with ``"none"`` the backward (``chunk_loss_bwd``)
recomputes the logits chunk by chunk.
)";
}  // namespace
}  // namespace recops::ops::chunk_loss_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_loss_ns;
  using A = ChunkLossArgs;
  using B = ChunkLossBwdArgs;
  for (const char* op : {kOp, kFwd, kBwd})
    reg.add(OpInfo{op, "training", core::describe_impls(impls())});
  const kit::PyArg red_names{.names = "none sum mean"};
  for (const char* op : {kOp, kFwd}) {
    const bool main = op == kOp;
    kit::Def<A> d(op, "training");
    d.arg<&A::hidden>("hidden", {.grad = main, .dense_from = 0})
        .arg<&A::weight>("weight", {.grad = main, .dense_from = 0})
        .arg<&A::labels>("labels", {.dense_from = 0})
        .arg<&A::bias>("bias", {.def = "None", .grad = main, .dense_from = 0})
        .arg<&A::token_weight>("token_weight", {.def = "None", .dense_from = 0})
        .arg<&A::ignore_index>("ignore_index", {.def = "-100"})
        .arg<&A::label_smoothing>("label_smoothing", {.def = "0.0"})
        .arg<&A::z_loss_scale>("z_loss_scale", {.def = "0.0"})
        .arg<&A::softcap>("softcap", {.def = "0.0"})
        .arg<&A::reduction>("reduction", {.def = "2", .py = red_names})
        .arg<&A::token_chunk>("token_chunk", {.def = "0"})
        .arg<&A::vocab_chunk>("vocab_chunk", {.def = "0"})
        .arg<&A::accum_dtype>("accum_dtype", {.def = "None"})
        .out("loss", main)
        .out("z_loss", false);
    if (main) {
      d.shapes(op_shapes).run(op_run).workspace(op_workspace).backward(kBwd).doc("", kDoc);
      // The gradients for grad_loss = 1 (binding.cpp scales them; "none" recomputes).
      d.save_outputs({"d_hidden", "d_weight", "d_bias"}, kFwd);
    } else {
      d.out("d_hidden", false)
          .out("d_weight", false)
          .out("d_bias", false)
          .shapes(fwd_shapes)
          .run(fwd_run)
          .workspace(fwd_workspace)
          .doc("-", "");
    }
    reg.add(d);
  }
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::grad_loss>("grad_loss", {.dense_from = 0})
              .arg<&B::hidden>("hidden", {.dense_from = 0})
              .arg<&B::weight>("weight", {.dense_from = 0})
              .arg<&B::labels>("labels", {.dense_from = 0})
              .arg<&B::bias>("bias", {.def = "None", .dense_from = 0})
              .arg<&B::token_weight>("token_weight", {.def = "None", .dense_from = 0})
              .arg<&B::ignore_index>("ignore_index", {.def = "-100"})
              .arg<&B::label_smoothing>("label_smoothing", {.def = "0.0"})
              .arg<&B::z_loss_scale>("z_loss_scale", {.def = "0.0"})
              .arg<&B::softcap>("softcap", {.def = "0.0"})
              .arg<&B::reduction>("reduction", {.def = "2", .py = red_names})
              .arg<&B::token_chunk>("token_chunk", {.def = "0"})
              .arg<&B::vocab_chunk>("vocab_chunk", {.def = "0"})
              .arg<&B::accum_dtype>("accum_dtype", {.def = "None"})
              .arg<&B::want_dbias>("want_dbias", {.def = "True"})
              .out("d_hidden")
              .out("d_weight")
              .out("d_bias")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .workspace(bwd_workspace)
              .doc("-", ""));
}
