// training/chunk_local_cumsum/chunk_local_cumsum.cpp: the entry of chunk_local_cumsum and
// chunk_local_cumsum_bwd. All validation happens here, once; then the ordered implementation list
// runs the first implementation that accepts (cuda_sm80 in CUDA builds, cpu_generic, reference).
// At the end: the OpInfos and argument tables.
#include "ops/training/chunk_local_cumsum/chunk_local_cumsum.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_local_cumsum/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_local_cumsum_ns {
namespace {
constexpr const char* kOp = "chunk_local_cumsum";
constexpr const char* kBwd = "chunk_local_cumsum_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

bool is_float(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// The rules on the arguments both directions share; *p gets the sizes and the scalars.
// ctx: the call's context, or nullptr in the shape function (no data read: offsets values are
// checked by the run).
template <class A>
Status check_args(const char* op, const A& a, const Context* ctx, Params* p) {
  const TensorView& g = a.g;
  RECOPS_CHECK((g.ndim == 3 || g.ndim == 4) && is_float(g.dtype), op,
               ": g must be [B, T, H] or [B, T, H, K] of fp64, fp32, fp16 or bf16; got ",
               describe(g));
  RECOPS_CHECK(g.is_contiguous(), op, ": g must be contiguous; got ", describe(g));
  const int64_t bt = a.chunk_size;
  RECOPS_CHECK(bt >= 1 && (bt & (bt - 1)) == 0, op, ": chunk_size=", bt,
               " must be a power of two (1, 2, 4, ..., 64, ...)");
  RECOPS_CHECK(std::isfinite(a.scale), op, ": scale=", a.scale, " must be finite");
  RECOPS_CHECK(!a.out_dtype || is_float(*a.out_dtype), op,
               ": out_dtype must be fp64, fp32, fp16 or bf16; got ", dtype_name(*a.out_dtype));
  const int64_t B = g.sizes[0], T = g.sizes[1];
  int64_t N = B;
  if (a.seq_offsets) {
    RECOPS_RETURN_IF_ERROR(
        training::check_packed_offsets(op, "g", g, *a.seq_offsets, B, T, "T (g's dim 1)", ctx, &N));
    p->seq_offsets = a.seq_offsets->data;
    p->off_dtype = a.seq_offsets->dtype;
  }
  p->B = B;
  p->T = T;
  // C = H (or H·K). An empty g may pair a 0 extent with huge ones, so B·T is formed only when g
  // has elements (then B·T <= numel).
  const int64_t n = g.inner_numel(0);
  p->C = n == 0 ? 0 : g.inner_numel(2);
  p->N = N;
  p->chunk = bt;
  p->scale = a.scale;
  p->device_index = g.device.index;
  return Status::Ok();
}

// `name` (an output or an incoming gradient): contiguous, g's shape, `dtype`, on g's device.
Status check_like_g(const char* op, const char* name, const TensorView& t, const TensorView& g,
                    DType dtype) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "g", g, name, t));
  RECOPS_CHECK(t.shape() == g.shape() && t.dtype == dtype && t.is_contiguous(), op, ": ", name,
               " must be contiguous ", dtype_name(dtype), shape_str(g.shape()),
               " (g's shape); got ", describe(t));
  return Status::Ok();
}

Status run(const char* op, const Params& p, DeviceType backend, const Context& ctx) {
  if (p.B == 0 || p.T == 0 || p.C == 0) return Status::Ok();  // empty: nothing to launch
  return core::dispatch(op, impls(), backend, p, ctx);
}
}  // namespace
}  // namespace recops::ops::chunk_local_cumsum_ns

namespace recops {

Status chunk_local_cumsum_shape(const ChunkLocalCumsumArgs& a, Shape* out_shape, DType* out_dtype) {
  using namespace ops::chunk_local_cumsum_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, nullptr, &p));
  *out_shape = a.g.shape();
  *out_dtype = a.out_dtype.value_or(DType::fp32);
  return Status::Ok();
}

Status chunk_local_cumsum(const ChunkLocalCumsumArgs& a, const TensorView& out,
                          const Context& ctx) {
  using namespace ops::chunk_local_cumsum_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &ctx, &p));
  RECOPS_RETURN_IF_ERROR(check_like_g(kOp, "out", out, a.g, a.out_dtype.value_or(DType::fp32)));
  p.in = a.g.data;
  p.out = out.data;
  p.in_dtype = a.g.dtype;
  p.out_dtype = out.dtype;
  p.reverse = a.reverse;
  return run(kOp, p, a.g.device.type, ctx);
}

Status chunk_local_cumsum_bwd(const ChunkLocalCumsumBwdArgs& a, const TensorView& dg,
                              const Context& ctx) {
  using namespace ops::chunk_local_cumsum_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &ctx, &p));
  RECOPS_RETURN_IF_ERROR(
      check_like_g(kBwd, "dout", a.dout, a.g, a.out_dtype.value_or(DType::fp32)));
  RECOPS_RETURN_IF_ERROR(check_like_g(kBwd, "dg", dg, a.g, a.g.dtype));
  // d out_t / d g_s = scale for s in t's chunk on the summed side of t: dg_s sums dout over the
  // positions whose sum contains s, i.e. the same chunked sum in the other direction.
  p.in = a.dout.data;
  p.out = dg.data;
  p.in_dtype = a.dout.dtype;
  p.out_dtype = dg.dtype;
  p.reverse = !a.reverse;
  return run(kBwd, p, a.g.device.type, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::chunk_local_cumsum_ns {
namespace {
Status fwd_shapes(const ChunkLocalCumsumArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  DType t;
  RECOPS_RETURN_IF_ERROR(chunk_local_cumsum_shape(a, &s, &t));
  outs->push_back({s, t});
  return Status::Ok();
}

constexpr const char* kDoc =
    R"(Chunk-local cumulative sum over time (the GDN/KDA gate cumsum; fla-core's
``fla.ops.utils.cumsum.chunk_local_cumsum``).

Each sequence is cut into chunks of ``chunk_size`` positions counted from its own start (the
last one may be shorter). Within a chunk, per head (and channel):
``out[t] = scale * sum(g[chunk start .. t])``, or with ``reverse=True``
``out[t] = scale * sum(g[t .. chunk end])``. The CPU sums in fp64 and rounds each output
once.

Args:
    g: ``[B, T, H]`` or ``[B, T, H, K]``, fp64, fp32, fp16 or bf16 (BTHD only: no head_first).
        Natural-log gates give natural-log cumsums.
    chunk_size: BT, a power of two (GDN uses 64).
    reverse: sum towards the chunk's end (used on dG).
    scale: multiplies each sum; ``1 / ln 2`` turns natural-log gates into log2 cumsums.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1;
        chunks restart at each sequence start; zero-length sequences are allowed.
    out_dtype: the output's dtype; None means fp32 (fla's ``output_dtype=torch.float``).

Returns:
    like ``g``, in out_dtype.

Differentiable in g (the op ``chunk_local_cumsum_bwd``: ``dg`` is the same chunked sum of the
output's gradient in the other direction, times scale, in g's dtype). Double backward raises.
)";
}  // namespace
}  // namespace recops::ops::chunk_local_cumsum_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_local_cumsum_ns;
  using A = ChunkLocalCumsumArgs;
  using B = ChunkLocalCumsumBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::g>("g", {.grad = true, .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::reverse>("reverse", {.def = "False"})
              .arg<&A::scale>("scale", {.def = "1.0"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::out_dtype>("out_dtype", {.def = "None"})
              .out("out")
              .shapes(fwd_shapes)
              .run_one<&chunk_local_cumsum>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::dout>("dout", {.dense_from = 0})
              .arg<&B::g>("g", {.dense_from = 0})
              .arg<&B::chunk_size>("chunk_size", {.def = "64"})
              .arg<&B::reverse>("reverse", {.def = "False"})
              .arg<&B::scale>("scale", {.def = "1.0"})
              .arg<&B::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&B::out_dtype>("out_dtype", {.def = "None"})
              .out_like("dg", "g")
              .shapes_like<&B::g>()
              .run_one<&chunk_local_cumsum_bwd>()
              .doc("-", ""));
}
