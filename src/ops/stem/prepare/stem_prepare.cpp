// stem_prepare: the entry. All validation happens here, once (spec §6, §10); then the ordered
// implementation list runs the first implementation that accepts.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/stem/common/stem_common.h"
#include "ops/stem/common/stem_rules.h"
#include "ops/stem/prepare/impls.h"
#include "recops/sparse_attn.h"

namespace recops::ops {
namespace {
const std::string kOp = "stem_prepare";
using P = StemPrepareParams;

const std::vector<core::Impl<P>>& impls() {
  static const auto list = core::standard_impls<P>(RECOPS_IF_CUDA(stem_prepare_cuda),
                                                   stem_prepare_cpu, stem_prepare_reference);
  return list;
}
}  // namespace

OpInfo stem_prepare_info() {
  return {kOp, "stem", core::describe_impls(impls())};
}

}  // namespace recops::ops

namespace recops {
namespace {
using namespace ops::stem;
const std::string& kOp = ops::kOp;

// Everything but the contents: dtypes, ranks, shapes, devices, attributes.
Status check_meta(const StemPrepareArgs& a) {
  RECOPS_RETURN_IF_ERROR(check_qkv_dtype(kOp, a, /*fp8=*/true));
  RECOPS_RETURN_IF_ERROR(check_qkv_ranks(kOp, a, "Dv"));
  const bool paged = a.block_table.has_value();
  const int kr = paged ? 4 : 3;
  RECOPS_RETURN_IF_ERROR(check_dtype(kOp, "cu_seqlens_q", a.cu_seqlens_q, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "cu_seqlens_q", a.cu_seqlens_q, 1, "[B+1]"));
  const int64_t B = a.cu_seqlens_q.sizes[0] - 1;
  RECOPS_CHECK(B >= 1 && B <= 65536, "recops.", kOp, ": batch size B=", B,
               " (cu_seqlens_q has B+1 entries) must lie in [1, 65536]");
  RECOPS_RETURN_IF_ERROR(check_dtype(kOp, "kv_seq_lens", a.kv_seq_lens, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "kv_seq_lens", a.kv_seq_lens, 1, "[B]"));
  RECOPS_CHECK(a.kv_seq_lens.sizes[0] == B, "recops.", kOp, ": kv_seq_lens has shape ",
               shape_str(a.kv_seq_lens.shape()), ", expected [B] = [", B, "] from cu_seqlens_q ",
               shape_str(a.cu_seqlens_q.shape()));
  RECOPS_RETURN_IF_ERROR(check_kv_index_meta(kOp, a, B));
  if (paged) {
    RECOPS_CHECK(a.block_table->sizes[0] == B, "recops.", kOp, ": block_table has shape ",
                 shape_str(a.block_table->shape()), ", expected [B, max_pages] with B=", B);
    RECOPS_CHECK(a.k.sizes[0] == a.v.sizes[0] && a.k.sizes[1] == a.v.sizes[1], "recops.", kOp,
                 ": k ", shape_str(a.k.shape()), " and v ", shape_str(a.v.shape()),
                 " must agree on pages and page_size");
    RECOPS_CHECK(a.block_table->is_contiguous(), "recops.", kOp,
                 ": block_table must be contiguous");
    RECOPS_CHECK(a.k.sizes[1] > 0, "recops.", kOp, ": page_size must be > 0, got k ",
                 shape_str(a.k.shape()));
  } else {
    RECOPS_CHECK(a.k.sizes[0] == a.v.sizes[0], "recops.", kOp, ": k ", shape_str(a.k.shape()),
                 " and v ", shape_str(a.v.shape()), " must have the same token count");
  }
  const int64_t Nq = a.q.sizes[1];
  const int64_t Nk = a.k.sizes[kr - 2];
  RECOPS_CHECK(a.v.sizes[kr - 2] == Nk, "recops.", kOp, ": k ", shape_str(a.k.shape()), " and v ",
               shape_str(a.v.shape()), " must have the same KV heads");
  RECOPS_RETURN_IF_ERROR(check_heads(kOp, a));
  const int64_t Bs = a.stem_block_size, Ts = a.stem_stride;
  RECOPS_CHECK(Bs > 0 && Ts > 0 && Bs % Ts == 0, "recops.", kOp,
               ": need stem_block_size > 0, stem_stride > 0 and stem_block_size % stem_stride "
               "== 0; got stem_block_size=",
               Bs, ", stem_stride=", Ts);
  // The indexer's plan stores stem_block_size as int32 (stem_indexer.md §5).
  RECOPS_RETURN_IF_ERROR(check_fits_int32(kOp, "stem_block_size", Bs));
  // vbias's statistics run over R = stem_block_size / stem_stride groups per KV block, the padded
  // tail included (README): R is bounded so that a huge block over a short sequence is an error,
  // not millions of empty groups per (batch, head) (a fuzzed 2^30 / 8 took minutes and 512 MiB).
  constexpr int64_t kMaxGroupsPerBlock = int64_t{1} << 16;
  RECOPS_CHECK(Bs / Ts <= kMaxGroupsPerBlock, "recops.", kOp,
               ": stem_block_size / stem_stride (groups per block) must be at most ",
               kMaxGroupsPerBlock, "; got stem_block_size=", Bs, ", stem_stride=", Ts);
  int64_t Df = 0;
  RECOPS_RETURN_IF_ERROR(checked_mul(kOp, "Df", "stem_stride", Ts, "D", a.q.sizes[2], &Df));
  RECOPS_CHECK(std::isfinite(a.lambda_mag), "recops.", kOp, ": lambda_mag=", a.lambda_mag,
               " must be finite");
  RECOPS_CHECK(a.max_q_blocks >= -1 && a.max_kv_blocks >= -1, "recops.", kOp,
               ": max_q_blocks=", a.max_q_blocks, " and max_kv_blocks=", a.max_kv_blocks,
               " must be >= 0 or -1 (the batch maximum)");
  // Scales.
  auto check_scale = [&](const char* name, const std::optional<TensorView>& s,
                         const Shape& per) -> Status {
    if (!s) return Status::Ok();
    RECOPS_RETURN_IF_ERROR(check_dtype(kOp, name, *s, DType::fp32, "float32"));
    RECOPS_CHECK(s->shape() == Shape{1} || s->shape() == per, "recops.", kOp, ": ", name,
                 " has shape ", shape_str(s->shape()), ", expected [1] or ", shape_str(per));
    RECOPS_CHECK(s->is_contiguous(), "recops.", kOp, ": ", name, " must be contiguous");
    return check_device(kOp, "q", a.q, name, *s);
  };
  RECOPS_RETURN_IF_ERROR(check_scale("q_scale", a.q_scale, {a.q.sizes[0], Nq}));
  RECOPS_RETURN_IF_ERROR(
      check_scale("k_scale", a.k_scale,
                  paged ? Shape{a.k.sizes[0], a.k.sizes[1], Nk} : Shape{a.k.sizes[0], Nk}));
  RECOPS_RETURN_IF_ERROR(check_scale("v_scale", a.v_scale, {Nk}));
  // Devices.
  RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "k", a.k));
  RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "v", a.v));
  RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "cu_seqlens_q", a.cu_seqlens_q));
  RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "kv_seq_lens", a.kv_seq_lens));
  return check_kv_index_device_and_strides(kOp, a);
}

}  // namespace

Status stem_prepare_shape(const StemPrepareArgs& a, Shape* qflat, Shape* kflat, Shape* vbias,
                          const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(check_meta(a));
  const int64_t B = a.cu_seqlens_q.sizes[0] - 1, Nq = a.q.sizes[1], D = a.q.sizes[2];
  const int64_t Nk = a.k.sizes[a.k.ndim - 2];
  int64_t Qmax = a.max_q_blocks, Kmax = a.max_kv_blocks;
  if (Qmax < 0 || Kmax < 0) {
    std::vector<int64_t> cu_q, Lk;
    RECOPS_RETURN_IF_ERROR(read_q_kv_lengths(kOp, a, &cu_q, &Lk, ctx));
    int64_t mq = 0, mk = 0;
    for (int64_t b = 0; b < B; ++b) {
      mq = std::max(mq, ceil_div(cu_q[b + 1] - cu_q[b], a.stem_block_size));
      mk = std::max(mk, ceil_div(Lk[b], a.stem_block_size));
    }
    if (Qmax < 0) Qmax = mq;
    if (Kmax < 0) Kmax = mk;
  }
  const int64_t Df = a.stem_stride * D;  // check_meta: no overflow
  *qflat = {B, Nq, Qmax, Df};
  *kflat = {B, Nk, Kmax, Df};
  *vbias = {B, Nk, Kmax};
  return Status::Ok();
}

Status stem_prepare(const StemPrepareArgs& a, const TensorView& qflat, const TensorView& kflat,
                    const TensorView& vbias, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(check_meta(a));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "qflat", qflat, 4, "[B, Nq, Qmax, Ts·D]"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "kflat", kflat, 4, "[B, Nk, Kmax, Ts·D]"));
  const int64_t B = a.cu_seqlens_q.sizes[0] - 1, Nq = a.q.sizes[1], D = a.q.sizes[2];
  const int64_t Nk = a.k.sizes[a.k.ndim - 2];
  const int64_t Df = a.stem_stride * D /* check_meta: no overflow */, Qmax = qflat.sizes[2],
                Kmax = kflat.sizes[2];
  const Shape sq = {B, Nq, Qmax, Df}, sk = {B, Nk, Kmax, Df}, sv = {B, Nk, Kmax};
  RECOPS_RETURN_IF_ERROR(check_output(kOp, "qflat", qflat, DType::bf16, sq));
  RECOPS_RETURN_IF_ERROR(check_output(kOp, "kflat", kflat, DType::bf16, sk));
  RECOPS_RETURN_IF_ERROR(check_output(kOp, "vbias", vbias, DType::fp32, sv));
  for (const auto* o : {&qflat, &kflat, &vbias})
    RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "outputs", *o));

  ops::StemPrepareParams p;
  set_qkv(a, &p);
  p.Dv = a.v.sizes[a.v.ndim - 1];
  p.Qmax = Qmax;
  p.Kmax = Kmax;
  p.Bs = a.stem_block_size;
  p.Ts = a.stem_stride;
  p.R = p.Bs / p.Ts;
  p.lambda_mag = a.lambda_mag;
  if (a.q_scale) {
    p.q_scale = static_cast<const float*>(a.q_scale->data);
    p.q_scale_per_token = a.q_scale->ndim == 2;
  }
  if (a.k_scale) {
    p.k_scale = static_cast<const float*>(a.k_scale->data);
    p.k_scale_per_token = a.k_scale->ndim > 1;
  }
  if (a.v_scale) {
    p.v_scale = static_cast<const float*>(a.v_scale->data);
    p.v_scale_per_head = a.v_scale->sizes[0] == Nk && Nk > 1;
  }
  p.qflat = static_cast<uint16_t*>(qflat.data);
  p.kflat = static_cast<uint16_t*>(kflat.data);
  p.vbias = static_cast<float*>(vbias.data);

  // The CPU always reads the index tensors; CUDA kernels read device copies (the lengths are
  // still read here when value checks are on).
  if (value_checks_on(a.q, ctx)) {
    RECOPS_RETURN_IF_ERROR(read_qkv_indices(kOp, a, B, &p, ctx, [&](int64_t b) -> Status {
      const int64_t Qb = ceil_div(p.cu_q[b + 1] - p.cu_q[b], p.Bs), Kb = ceil_div(p.Lk[b], p.Bs);
      RECOPS_CHECK(Qb <= Qmax, "recops.", kOp, ": batch ", b, " has ", Qb,
                   " query blocks, more than max_q_blocks (Qmax) = ", Qmax);
      RECOPS_CHECK(Kb <= Kmax, "recops.", kOp, ": batch ", b, " has ", Kb,
                   " key blocks, more than max_kv_blocks (Kmax) = ", Kmax);
      return Status::Ok();
    }));
  }
  if (qflat.numel() == 0 && kflat.numel() == 0 && vbias.numel() == 0) return Status::Ok();
  return core::dispatch(kOp, ops::impls(), a.q.device.type, p, ctx);
}

}  // namespace recops

// ---- the argument table (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
Status prepare_shapes(const StemPrepareArgs& a, std::vector<kit::OutSpec>* outs,
                      const Context& ctx) {
  // -1 reads the lengths, which a Meta call (torch.compile, meta tensors) does not have.
  const bool meta =
      stem::shape_only(a.q) || stem::shape_only(a.cu_seqlens_q) || stem::shape_only(a.kv_seq_lens);
  RECOPS_CHECK(!meta || (a.max_q_blocks >= 0 && a.max_kv_blocks >= 0), "recops.", kOp,
               ": max_q_blocks=", a.max_q_blocks, " and max_kv_blocks=", a.max_kv_blocks,
               " must be given (>= 0) under torch.compile / on meta tensors; -1 reads the "
               "lengths on the host");
  // The layouts of the table's dense_from (the binding's copies).
  StemPrepareArgs b = a;
  stem::dense_qkv_layouts(&b);
  b.q_scale = stem::dense_layout(a.q_scale);
  b.k_scale = stem::dense_layout(a.k_scale);
  b.v_scale = stem::dense_layout(a.v_scale);
  Shape sq, sk, sv;
  RECOPS_RETURN_IF_ERROR(stem_prepare_shape(b, &sq, &sk, &sv, ctx));
  outs->push_back({sq, DType::bf16});
  outs->push_back({sk, DType::bf16});
  outs->push_back({sv, DType::fp32});
  return Status::Ok();
}

Status prepare_run(const StemPrepareArgs& a, const kit::Outputs& o, const Context& ctx) {
  return stem_prepare(a, o.views[0], o.views[1], o.views[2], ctx);
}

constexpr const char* kDoc = R"(Block representatives and the value-magnitude bias (spec §6).

``qflat[b,hq,i, g·D:(g+1)·D] = bf16(Σ_r q[i·Bs + g + r·Ts])`` (natural group order),
``kflat`` the same over keys with the groups mirrored (``Ts-1-g``), and
``vbias[b,hk,j] = (1/R) Σ_r λ·max(0, z_{jR+r})`` with ``z`` the standardised log of the
per-group max value norm over the padded ``R·Kb`` groups.

Args:
    q: ``[Tq, Nq, D]`` bf16/fp16/float8_e4m3fn, packed by ``cu_seqlens_q`` ``[B+1]`` int32.
    k, v: q's dtype; packed ``[Tk, Nk, D]`` with ``cu_seqlens_kv`` ``[B+1]``, or paged
        ``[pages, page_size, Nk, D]`` with ``block_table`` ``[B, max_pages]`` (exactly one).
    kv_seq_lens: ``[B]`` int32 key tokens per batch.
    q_scale, k_scale: fp32 ``[1]`` or per token and head; v_scale: ``[1]`` or ``[Nk]``.
    max_q_blocks, max_kv_blocks: ``Qmax``/``Kmax``; -1 reads the lengths on the host (not
        allowed under ``torch.compile``: pass them).
Returns:
    ``qflat`` bf16 ``[B, Nq, Qmax, Df]``, ``kflat`` bf16 ``[B, Nk, Kmax, Df]``,
    ``vbias`` fp32 ``[B, Nk, Kmax]``.
)";
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using recops::StemPrepareArgs;
  reg.add(recops::ops::stem_prepare_info());
  // Dense layouts (the binding copies others): q, k, v and the index vectors in their last dim,
  // block_table and the scales whole (as prepare_shapes assumes for a Meta call).
  constexpr int kInner = -2, kWhole = 0;
  reg.add(recops::kit::Def<StemPrepareArgs>("stem_prepare", "stem")
              .value_errors()  // stem_indexer.md §10: ValueError, TypeError for dtypes
              .forward_only()  // no gradient (stem_indexer.md)
              .arg<&StemPrepareArgs::q>("q", {.dense_from = kInner})
              .arg<&StemPrepareArgs::k>("k", {.dense_from = kInner})
              .arg<&StemPrepareArgs::v>("v", {.dense_from = kInner})
              .arg<&StemPrepareArgs::cu_seqlens_q>("cu_seqlens_q", {.dense_from = kInner})
              .arg<&StemPrepareArgs::kv_seq_lens>("kv_seq_lens", {.dense_from = kInner})
              .arg<&StemPrepareArgs::cu_seqlens_kv>(
                  "cu_seqlens_kv", {.def = "None", .kw = true, .dense_from = kInner})
              .arg<&StemPrepareArgs::block_table>("block_table",
                                                  {.def = "None", .kw = true, .dense_from = kWhole})
              .arg<&StemPrepareArgs::q_scale>("q_scale",
                                              {.def = "None", .kw = true, .dense_from = kWhole})
              .arg<&StemPrepareArgs::k_scale>("k_scale",
                                              {.def = "None", .kw = true, .dense_from = kWhole})
              .arg<&StemPrepareArgs::v_scale>("v_scale",
                                              {.def = "None", .kw = true, .dense_from = kWhole})
              .arg<&StemPrepareArgs::max_q_blocks>("max_q_blocks", {.def = "-1", .kw = true})
              .arg<&StemPrepareArgs::max_kv_blocks>("max_kv_blocks", {.def = "-1", .kw = true})
              .arg<&StemPrepareArgs::stem_block_size>("stem_block_size", {.def = "128", .kw = true})
              .arg<&StemPrepareArgs::stem_stride>("stem_stride", {.def = "16", .kw = true})
              .arg<&StemPrepareArgs::lambda_mag>("lambda_mag", {.def = "0.3", .kw = true})
              .out("qflat", false)
              .out("kflat", false)
              .out("vbias", false)
              .shapes(recops::ops::prepare_shapes)
              .run(recops::ops::prepare_run)
              .doc("", recops::ops::kDoc));
}
