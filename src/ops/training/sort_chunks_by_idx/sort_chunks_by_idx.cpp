// training/sort_chunks_by_idx/sort_chunks_by_idx.cpp: the entry. All validation happens here,
// once (shapes, dtypes, devices; the values of split_sizes and sorted_idx on the CPU always and on
// CUDA under the validation switch); then the ordered implementation list runs the first
// implementation that accepts. At the end: the registration (OpInfos and argument tables).
#include "ops/training/sort_chunks_by_idx/sort_chunks_by_idx.h"

#include <vector>

#include "core/cuda/runtime.h"
#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/training/sort_chunks_by_idx/impls.h"

namespace recops::ops::sort_chunks_by_idx_ns {
namespace {
constexpr const char* kOp = "sort_chunks_by_idx";
constexpr const char* kBwd = "sort_chunks_by_idx_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// The tensors of one direction: the row data, its probs and the index tensors.
struct Inputs {
  const char* op;
  const char* data_name;  // "input" or "grad_output"
  const TensorView& data;
  const char* probs_name;  // "probs" or "grad_probs"
  const std::optional<TensorView>& probs;
  const TensorView& split_sizes;
  const TensorView& sorted_idx;
};

Status check_index(const char* op, const char* name, const TensorView& t, const TensorView& data) {
  RECOPS_CHECK(t.dtype == DType::int32 || t.dtype == DType::int64, op, ": ", name,
               " must be int32 or int64, got ", dtype_name(t.dtype));
  RECOPS_CHECK(t.ndim == 1 && t.is_contiguous(), op, ": ", name,
               " must be 1-D [C] and contiguous, got ", describe(t));
  return core::check_same_device(op, name, t, "the data", data);
}

// Shapes, dtypes and devices (no data is read: the Meta kernel runs this too).
Status check_meta(const Inputs& in) {
  const char* op = in.op;
  const TensorView& x = in.data;
  RECOPS_CHECK(x.ndim >= 1, op, ": ", in.data_name, " must be [T, ...] (at least one dim)");
  RECOPS_CHECK(x.is_contiguous(), op, ": ", in.data_name, " must be contiguous");
  RECOPS_RETURN_IF_ERROR(check_index(op, "split_sizes", in.split_sizes, x));
  RECOPS_RETURN_IF_ERROR(check_index(op, "sorted_idx", in.sorted_idx, x));
  RECOPS_CHECK(in.sorted_idx.sizes[0] == in.split_sizes.sizes[0], op,
               ": sorted_idx must have split_sizes' length C=", in.split_sizes.sizes[0], ", got ",
               in.sorted_idx.sizes[0]);
  if (in.probs) {
    const TensorView& p = *in.probs;
    RECOPS_CHECK(is_floating(p.dtype), op, ": ", in.probs_name, " must be a floating dtype, got ",
                 dtype_name(p.dtype));
    RECOPS_CHECK(p.ndim == 1 && p.sizes[0] == x.sizes[0] && p.is_contiguous(), op, ": ",
                 in.probs_name, " must be contiguous [T] with T=", x.sizes[0], " (", in.data_name,
                 "'s rows), got ", describe(p));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, in.probs_name, p, in.data_name, x));
  }
  return Status::Ok();
}

int64_t value_at(const void* p, DType t, int64_t i) {
  return t == DType::int64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

// The values of a [C] index tensor on the host (copied from CUDA); false: not to be checked.
Status host_values(const TensorView& t, std::vector<int64_t>* buf, const void** host,
                   const Context& ctx) {
  if (t.device.is_cpu()) {
    *host = t.data;
    return Status::Ok();
  }
  buf->resize(static_cast<size_t>(t.sizes[0]) + 1);
  RECOPS_RETURN_IF_ERROR(core::cuda::copy_strided_to_host(
      buf->data(), t.data, dtype_size(t.dtype), t.sizes[0], 1, t.device.index, ctx.stream));
  *host = buf->data();  // packed at the element's own size
  return Status::Ok();
}

// Σ split_sizes = T with every size >= 0; sorted_idx a permutation of 0..C-1.
Status check_values(const Inputs& in, const Context& ctx) {
  const TensorView& x = in.data;
  if (!x.device.is_cpu() && (!validate_enabled() || core::cuda::stream_capturing(ctx.stream)))
    return Status::Ok();
  const char* op = in.op;
  const int64_t C = in.split_sizes.sizes[0], T = x.sizes[0];
  std::vector<int64_t> sbuf, ibuf;
  const void* s = nullptr;
  const void* k = nullptr;
  RECOPS_RETURN_IF_ERROR(host_values(in.split_sizes, &sbuf, &s, ctx));
  RECOPS_RETURN_IF_ERROR(host_values(in.sorted_idx, &ibuf, &k, ctx));
  int64_t sum = 0;
  for (int64_t c = 0; c < C; ++c) {
    const int64_t v = value_at(s, in.split_sizes.dtype, c);
    RECOPS_CHECK(v >= 0, op, ": split_sizes[", c, "]=", v, " must be >= 0");
    RECOPS_CHECK(v <= T - sum, op, ": split_sizes must sum to T=", T, " (", in.data_name,
                 "'s rows); the first ", c + 1, " already exceed it");
    sum += v;
  }
  RECOPS_CHECK(sum == T, op, ": split_sizes must sum to T=", T, " (", in.data_name,
               "'s rows), got ", sum);
  std::vector<int64_t> seen(static_cast<size_t>(C), -1);
  for (int64_t j = 0; j < C; ++j) {
    const int64_t v = value_at(k, in.sorted_idx.dtype, j);
    RECOPS_CHECK(v >= 0 && v < C, op, ": sorted_idx[", j, "]=", v, " is outside [0, C) with C=", C,
                 " (it must be a permutation of 0..C-1)");
    RECOPS_CHECK(seen[static_cast<size_t>(v)] < 0, op,
                 ": sorted_idx must be a permutation of "
                 "0..C-1, but ",
                 v, " appears twice (sorted_idx[", seen[static_cast<size_t>(v)],
                 "] and sorted_idx[", j, "])");
    seen[static_cast<size_t>(v)] = j;
  }
  return Status::Ok();
}

Status check_out(const char* op, const char* name, const TensorView& out, const char* like_name,
                 const TensorView& like) {
  RECOPS_CHECK(out.shape() == like.shape() && out.dtype == like.dtype && out.is_contiguous(), op,
               ": ", name, " must be contiguous and like ", like_name, " (", describe(like),
               "); got ", describe(out));
  return core::check_same_device(op, name, out, like_name, like);
}

Status run(const Inputs& in, const TensorView& out, const TensorView* out_probs, bool inverse,
           const Context& ctx) {
  const char* op = in.op;
  RECOPS_RETURN_IF_ERROR(check_meta(in));
  const char* out_name = inverse ? "grad_input" : "output";
  const char* out_probs_name = inverse ? "grad_probs_in" : "permuted_probs";
  RECOPS_RETURN_IF_ERROR(check_out(op, out_name, out, in.data_name, in.data));
  RECOPS_CHECK((out_probs != nullptr) == in.probs.has_value(), op, ": ", out_probs_name,
               " must be given exactly when ", in.probs_name, " is");
  if (out_probs)
    RECOPS_RETURN_IF_ERROR(check_out(op, out_probs_name, *out_probs, in.probs_name, *in.probs));
  RECOPS_RETURN_IF_ERROR(check_values(in, ctx));
  Params p;
  p.from = in.data.data;
  p.to = out.data;
  p.T = in.data.sizes[0];
  p.row_bytes = in.data.inner_numel(1) * in.data.itemsize();
  if (in.probs) {
    p.from_probs = in.probs->data;
    p.to_probs = out_probs->data;
    p.probs_bytes = in.probs->itemsize();
  }
  p.inverse = inverse;
  p.split_sizes = in.split_sizes.data;
  p.sorted_idx = in.sorted_idx.data;
  p.split_dtype = in.split_sizes.dtype;
  p.idx_dtype = in.sorted_idx.dtype;
  p.C = in.split_sizes.sizes[0];
  p.workspace = ctx.workspace;
  p.device_index = in.data.device.index;
  if (p.T == 0) return Status::Ok();  // nothing to move (C may be > 0 with zero sizes)
  if (in.data.device.is_cuda()) {
    const size_t need = sort_chunks_by_idx_workspace_bytes(in.data, in.split_sizes);
    RECOPS_CHECK(ctx.workspace_bytes >= need, op, ": the CUDA path needs ", need,
                 " bytes of workspace (sort_chunks_by_idx_workspace_bytes), got ",
                 ctx.workspace_bytes);
  }
  return core::dispatch(op, impls(), in.data.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::sort_chunks_by_idx_ns

namespace recops {

Status sort_chunks_by_idx(const SortChunksByIdxArgs& a, const TensorView& output,
                          const TensorView* permuted_probs, const Context& ctx) {
  using namespace ops::sort_chunks_by_idx_ns;
  return run({kOp, "input", a.input, "probs", a.probs, a.split_sizes, a.sorted_idx}, output,
             permuted_probs, false, ctx);
}

Status sort_chunks_by_idx_bwd(const SortChunksByIdxBwdArgs& a, const TensorView& grad_input,
                              const TensorView* grad_probs_in, const Context& ctx) {
  using namespace ops::sort_chunks_by_idx_ns;
  return run(
      {kBwd, "grad_output", a.grad_output, "grad_probs", a.grad_probs, a.split_sizes, a.sorted_idx},
      grad_input, grad_probs_in, true, ctx);
}

size_t sort_chunks_by_idx_workspace_bytes(const TensorView& input, const TensorView& split_sizes) {
  if (!input.device.is_cuda() || split_sizes.ndim != 1) return 0;
  return static_cast<size_t>(3 * split_sizes.sizes[0] + 2) * sizeof(int64_t);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::sort_chunks_by_idx_ns {
namespace {
constexpr const char* kDoc = R"(Reorders chunks of rows (Megatron's ``sort_chunks_by_idxs``
without the host sync): chunk c is ``split_sizes[c]`` consecutive rows of ``input``; the output
is the concatenation of chunks ``sorted_idx[0], sorted_idx[1], ...``.

Args:
    input: ``[T, ...]``, any dtype (rows are moved as bytes).
    split_sizes: ``[C]`` int32/int64, non-negative, summing to T.
    sorted_idx: ``[C]`` int32/int64, a permutation of ``0..C-1``.
    probs: optional ``[T]`` float, permuted the same way.

Returns:
    ``(output, permuted_probs)``: ``output`` like ``input``; ``permuted_probs`` like ``probs``, or
    an empty ``[0]`` tensor without probs.

The values are checked on the CPU always, on CUDA with ``recops.set_validate(True)``.
Differentiable in ``input`` and ``probs`` (the inverse permutation, ``sort_chunks_by_idx_bwd``).
)";

using A = SortChunksByIdxArgs;
using B = SortChunksByIdxBwdArgs;

std::vector<kit::OutSpec> out_specs(const TensorView& data, const std::optional<TensorView>& p) {
  return {{data.shape(), data.dtype},
          {p ? p->shape() : Shape{0}, p ? p->dtype : DType::fp32, p.has_value()}};
}

Status fwd_shapes(const A& a, std::vector<kit::OutSpec>* o) {
  RECOPS_RETURN_IF_ERROR(
      check_meta({kOp, "input", a.input, "probs", a.probs, a.split_sizes, a.sorted_idx}));
  *o = out_specs(a.input, a.probs);
  return Status::Ok();
}
Status bwd_shapes(const B& a, std::vector<kit::OutSpec>* o) {
  RECOPS_RETURN_IF_ERROR(check_meta({kBwd, "grad_output", a.grad_output, "grad_probs", a.grad_probs,
                                     a.split_sizes, a.sorted_idx}));
  *o = out_specs(a.grad_output, a.grad_probs);
  return Status::Ok();
}
Status fwd_run(const A& a, const kit::Outputs& o, const Context& ctx) {
  return sort_chunks_by_idx(a, o.views[0], o.get(1), ctx);
}
Status bwd_run(const B& a, const kit::Outputs& o, const Context& ctx) {
  return sort_chunks_by_idx_bwd(a, o.views[0], o.get(1), ctx);
}
size_t fwd_workspace(const A& a, const kit::Outputs&) {
  return sort_chunks_by_idx_workspace_bytes(a.input, a.split_sizes);
}
size_t bwd_workspace(const B& a, const kit::Outputs&) {
  return sort_chunks_by_idx_workspace_bytes(a.grad_output, a.split_sizes);
}
}  // namespace
}  // namespace recops::ops::sort_chunks_by_idx_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::sort_chunks_by_idx_ns;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::input>("input", {.grad = true, .dense_from = 0})
              .arg<&A::split_sizes>("split_sizes", {.dense_from = 0})
              .arg<&A::sorted_idx>("sorted_idx", {.dense_from = 0})
              .arg<&A::probs>("probs", {.def = "None", .grad = true, .dense_from = 0})
              .out_like("output", "input")
              .out("permuted_probs")
              .shapes(fwd_shapes)
              .run(fwd_run)
              .workspace(fwd_workspace)
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::grad_output>("grad_output", {.dense_from = 0})
              .arg<&B::split_sizes>("split_sizes", {.dense_from = 0})
              .arg<&B::sorted_idx>("sorted_idx", {.dense_from = 0})
              .arg<&B::grad_probs>("grad_probs", {.def = "None", .dense_from = 0})
              .out_like("grad_input", "grad_output")
              .out("grad_probs_in")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .workspace(bwd_workspace)
              .doc("-", ""));
}
