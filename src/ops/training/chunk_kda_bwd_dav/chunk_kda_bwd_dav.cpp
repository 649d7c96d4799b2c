// training/chunk_kda_bwd_dav/chunk_kda_bwd_dav.cpp: the entry of chunk_kda_bwd_dav. All validation
// happens here, once; then the ordered implementation list runs the first implementation that
// accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the OpInfo and the
// argument table (forward only).
#include "ops/training/chunk_kda_bwd_dav/chunk_kda_bwd_dav.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_kda_bwd_dav/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_bwd_dav_ns {
namespace {
constexpr const char* kOp = "chunk_kda_bwd_dav";
constexpr training::GdnEntry kEntry{kOp, "v_new"};

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: the offsets' values are checked by the run).
Status check_args(const ChunkKdaBwdDavArgs& a, const Context* ctx, Params* p) {
  const TensorView& vn = a.v_new;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(vn, "[B, T, HV, V]"));
  const int64_t B = vn.sizes[0], T = vn.sizes[1], HV = vn.sizes[2], V = vn.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_sized("do", "[B, T, HV, V]", a.d_o, vn, {B, T, HV, V}, "v_new's"));
  const int64_t bt = a.chunk_size;
  RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
  RECOPS_RETURN_IF_ERROR(kEntry.check_sized("Aqk", "[B, T, HV, BT]", a.Aqk, vn, {B, T, HV, bt},
                                            "v_new's B, T, HV; BT = chunk_size"));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, vn, B, T, ctx, &N, p));
  if (a.scale) RECOPS_CHECK(std::isfinite(*a.scale), kOp, ": scale=", *a.scale, " must be finite");
  p->v_new = vn.data, p->d_o = a.d_o.data, p->Aqk = a.Aqk.data;
  p->vn_dtype = vn.dtype, p->do_dtype = a.d_o.dtype, p->A_dtype = a.Aqk.dtype;
  p->B = B, p->T = T, p->HV = HV, p->V = V;
  p->BT = bt;
  p->N = N;
  p->scale = a.scale ? *a.scale : 1.0;
  p->device_index = vn.device.index;
  return Status::Ok();
}

Status prepare(const ChunkKdaBwdDavArgs& a, const ChunkKdaBwdDavOut& o, const Context& ctx,
               Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(kEntry.check_out("dAqk", o.dAqk, a.v_new, {p->B, p->T, p->HV, p->BT},
                                          DType::fp32, "([B, T, HV, BT]) of dtype"));
  RECOPS_RETURN_IF_ERROR(kEntry.check_out("dv", o.dv, a.v_new, a.d_o.shape(), a.d_o.dtype,
                                          "(do's sizes) of do's dtype"));
  p->dAqk = static_cast<float*>(o.dAqk.data);
  p->dv = o.dv.data;
  return Status::Ok();
}

bool all_empty(const ChunkKdaBwdDavOut& o) {
  return o.dAqk.numel() == 0 && o.dv.numel() == 0;
}
}  // namespace
}  // namespace recops::ops::chunk_kda_bwd_dav_ns

namespace recops {

Status chunk_kda_bwd_dav_shape(const ChunkKdaBwdDavArgs& a, Shape* dAqk, Shape* dv,
                               DType* dv_dtype) {
  using namespace ops::chunk_kda_bwd_dav_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  *dAqk = {p.B, p.T, p.HV, p.BT};
  *dv = a.d_o.shape();
  *dv_dtype = a.d_o.dtype;
  return Status::Ok();
}

Status chunk_kda_bwd_dav(const ChunkKdaBwdDavArgs& a, const ChunkKdaBwdDavOut& out,
                         const Context& ctx) {
  using namespace ops::chunk_kda_bwd_dav_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, out, ctx, &p));
  if (all_empty(out)) return Status::Ok();  // nothing to write
  return core::dispatch(kOp, impls(), a.v_new.device.type, p, ctx);
}

Status chunk_kda_bwd_dav_plain(const ChunkKdaBwdDavArgs& a, const ChunkKdaBwdDavOut& out) {
  using namespace ops::chunk_kda_bwd_dav_ns;
  RECOPS_CHECK(a.v_new.device.is_cpu(), "chunk_kda_bwd_dav_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, out, ctx, &p));
  p.plain = true;
  if (all_empty(out)) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_kda_bwd_dav_ns {
namespace {
Status shapes(const ChunkKdaBwdDavArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape dA, dv;
  DType dv_dtype = DType::fp32;
  RECOPS_RETURN_IF_ERROR(chunk_kda_bwd_dav_shape(a, &dA, &dv, &dv_dtype));
  outs->push_back({dA, DType::fp32});
  outs->push_back({dv, dv_dtype});
  return Status::Ok();
}

Status run(const ChunkKdaBwdDavArgs& a, const kit::Outputs& o, const Context& ctx) {
  return chunk_kda_bwd_dav(a, {o.views[0], o.views[1]}, ctx);
}

constexpr const char* kDoc =
    R"(The KDA backward through the intra-chunk output term (fla-core's
``fla.ops.kda.chunk_bwd.chunk_kda_bwd_dAv``), per chunk of ``chunk_size`` positions.

Each sequence is cut into chunks from its own start (the last one may be shorter). For rows i, j
of a chunk and value head hv::

    dv_j    = sum_{i >= j} Aqk[i, j] * do_i          (the lower part of Aqk only)
    dAqk_ij = scale * dot(do_i, v_new_j)   (j <= i; 0 elsewhere, all BT columns)

Aqk (chunk_kda_fwd_intra's) already includes scale (Aqk = scale * A_hat), so dAqk is the
gradient with respect to the unscaled A_hat, as fla's kernel gives it.

Args:
    v_new: ``[B, T, HV, V]``, fp64, fp32, fp16 or bf16.
    do: ``[B, T, HV, V]``: the gradient of o.
    Aqk: ``[B, T, HV, BT]``: row t holds its chunk's row of scale * A_hat.
    scale: default 1; pass the forward's scale (fla always does).
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    chunk_size: 16, 32 or 64; Aqk's last dim.

Returns:
    (dAqk, dv): dAqk ``[B, T, HV, BT]`` fp32; dv do's sizes and dtype.

Forward only (inputs that require grad raise).
)";
}  // namespace
}  // namespace recops::ops::chunk_kda_bwd_dav_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_kda_bwd_dav_ns;
  using A = ChunkKdaBwdDavArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::v_new>("v_new", {.dense_from = 0})
              .arg<&A::d_o>("do", {.dense_from = 0})
              .arg<&A::Aqk>("Aqk", {.dense_from = 0})
              .arg<&A::scale>("scale", {.def = "None"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .out("dAqk")
              .out_like("dv", "do")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
