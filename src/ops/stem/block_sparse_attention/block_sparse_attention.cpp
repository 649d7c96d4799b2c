// block_sparse_attention: the entry. All validation happens here, once (spec §7, §10); then the
// ordered implementation list runs the first implementation that accepts.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/dispatch.h"
#include "ops/stem/block_sparse_attention/impls.h"
#include "core/kit/op_def.h"
#include "ops/stem/common/stem_common.h"
#include "ops/stem/common/stem_rules.h"
#include "recops/sparse_attn.h"

namespace recops::ops {
namespace {
const std::string kOp = "block_sparse_attention";
using P = BlockSparseAttentionParams;

#ifdef RECOPS_WITH_CUDA
std::string cuda_can_implement(const P& p) {
  std::string why = core::cuda_capability_at_least<80, P>(p);
  return why.empty() ? block_sparse_attention_cuda_reason(p) : why;
}
std::string cuda_sm90_can_implement(const P& p) {
  std::string why = core::cuda_capability_at_least<90, P>(p);
  return why.empty() ? block_sparse_attention_cuda_sm90_reason(p) : why;
}
std::string cuda_fa_can_implement(const P& p) {
  std::string why = core::cuda_capability_at_least<80, P>(p);
  return why.empty() ? block_sparse_attention_cuda_fa_reason(p) : why;
}
#endif

const std::vector<core::Impl<P>>& impls() {
  static const std::vector<core::Impl<P>> list = {
#ifdef RECOPS_WITH_CUDA
      {"cuda_sm90", DeviceType::cuda, core::cuda::any_device_reason, cuda_sm90_can_implement,
       block_sparse_attention_cuda_sm90},
      {"cuda_sm80_fa", DeviceType::cuda, core::cuda::any_device_reason, cuda_fa_can_implement,
       block_sparse_attention_cuda_fa, block_sparse_attention_cuda_fa_candidates},
      {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason, cuda_can_implement,
       block_sparse_attention_cuda},
#endif
      {"cpu_generic", DeviceType::cpu, core::always_available, core::accept_all<P>,
       block_sparse_attention_cpu},
      {"reference", DeviceType::cpu, core::always_available, core::accept_all<P>,
       block_sparse_attention_reference},
  };
  return list;
}
}  // namespace

OpInfo block_sparse_attention_info() {
  return {kOp, "stem", core::describe_impls(impls())};
}

}  // namespace recops::ops

namespace recops {
namespace {
using namespace ops::stem;
const std::string& kOp = ops::kOp;

Status check_meta(const BlockSparseAttentionArgs& a) {
  const DType t = a.q.dtype;
  RECOPS_CHECK_TYPE(t == DType::bf16 || t == DType::fp16, "recops.", kOp,
                    ": q must have dtype bfloat16 or float16, got ", dtype_name(t));
  RECOPS_CHECK_TYPE(a.k.dtype == t && a.v.dtype == t, "recops.", kOp,
                    ": q, k and v must have dtype the same dtype (no dtype mix); got q ",
                    dtype_name(t), ", k ", dtype_name(a.k.dtype), ", v ", dtype_name(a.v.dtype));
  RECOPS_RETURN_IF_ERROR(
      check_dtype(kOp, "sparse_indices", a.sparse_indices, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(
      check_dtype(kOp, "sparse_seq_len", a.sparse_seq_len, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_dtype(kOp, "cu_seqlens_q", a.cu_seqlens_q, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_dtype(kOp, "kv_seq_lens", a.kv_seq_lens, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "q", a.q, 3, "[Tq, Nq, D]"));
  RECOPS_CHECK(a.cu_seqlens_kv.has_value() != a.block_table.has_value(), "recops.", kOp,
               ": give exactly one of cu_seqlens_kv (packed K/V) and block_table (paged K/V); got ",
               a.cu_seqlens_kv ? "both" : "neither");
  const bool paged = a.block_table.has_value();
  const int kr = paged ? 4 : 3;
  RECOPS_RETURN_IF_ERROR(
      check_rank(kOp, "k", a.k, kr, paged ? "[pages, page_size, Nk, D]" : "[Tk, Nk, D]"));
  RECOPS_RETURN_IF_ERROR(
      check_rank(kOp, "v", a.v, kr, paged ? "[pages, page_size, Nk, D]" : "[Tk, Nk, D]"));
  RECOPS_RETURN_IF_ERROR(
      check_rank(kOp, "sparse_indices", a.sparse_indices, 4, "[B, Nq, Qmax, Kmax]"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "sparse_seq_len", a.sparse_seq_len, 3, "[B, Nq, Qmax]"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "cu_seqlens_q", a.cu_seqlens_q, 1, "[B+1]"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "kv_seq_lens", a.kv_seq_lens, 1, "[B]"));
  const int64_t B = a.sparse_indices.sizes[0], Nq = a.q.sizes[1], D = a.q.sizes[2];
  const int64_t Qmax = a.sparse_indices.sizes[2];
  RECOPS_CHECK(B >= 1 && B <= 65536, "recops.", kOp, ": batch size B=", B,
               " must lie in [1, 65536]");
  RECOPS_CHECK(a.sparse_indices.sizes[1] == Nq, "recops.", kOp, ": sparse_indices ",
               shape_str(a.sparse_indices.shape()), " must have q's Nq=", Nq, " heads");
  RECOPS_CHECK(a.sparse_seq_len.shape() == Shape({B, Nq, Qmax}), "recops.", kOp,
               ": sparse_seq_len has shape ", shape_str(a.sparse_seq_len.shape()),
               ", expected [B, Nq, Qmax] = ", shape_str({B, Nq, Qmax}), " from sparse_indices");
  RECOPS_CHECK(a.cu_seqlens_q.sizes[0] == B + 1 && a.kv_seq_lens.sizes[0] == B, "recops.", kOp,
               ": cu_seqlens_q ", shape_str(a.cu_seqlens_q.shape()), " and kv_seq_lens ",
               shape_str(a.kv_seq_lens.shape()), " must be [B+1] and [B] with B=", B,
               " (from sparse_indices)");
  RECOPS_CHECK(a.sparse_indices.is_contiguous() && a.sparse_seq_len.is_contiguous(), "recops.", kOp,
               ": sparse_indices and sparse_seq_len must be contiguous");
  if (paged) {
    RECOPS_RETURN_IF_ERROR(check_dtype(kOp, "block_table", *a.block_table, DType::int32, "int32"));
    RECOPS_RETURN_IF_ERROR(check_rank(kOp, "block_table", *a.block_table, 2, "[B, max_pages]"));
    RECOPS_CHECK(a.block_table->sizes[0] == B && a.block_table->is_contiguous(), "recops.", kOp,
                 ": block_table must be a contiguous [B, max_pages] with B=", B, ", got ",
                 shape_str(a.block_table->shape()));
    RECOPS_CHECK(a.k.shape() == a.v.shape() && a.k.sizes[1] > 0, "recops.", kOp, ": k ",
                 shape_str(a.k.shape()), " and v ", shape_str(a.v.shape()),
                 " must have one shape with page_size > 0");
  } else {
    RECOPS_RETURN_IF_ERROR(
        check_dtype(kOp, "cu_seqlens_kv", *a.cu_seqlens_kv, DType::int32, "int32"));
    RECOPS_RETURN_IF_ERROR(check_rank(kOp, "cu_seqlens_kv", *a.cu_seqlens_kv, 1, "[B+1]"));
    RECOPS_CHECK(a.cu_seqlens_kv->sizes[0] == B + 1, "recops.", kOp, ": cu_seqlens_kv has shape ",
                 shape_str(a.cu_seqlens_kv->shape()), ", expected [B+1] = [", B + 1, "]");
    RECOPS_CHECK(a.k.shape() == a.v.shape(), "recops.", kOp, ": k ", shape_str(a.k.shape()),
                 " and v ", shape_str(a.v.shape()), " must have one shape (Dv = D)");
  }
  const int64_t Nk = a.k.sizes[kr - 2];
  RECOPS_CHECK(a.k.sizes[kr - 1] == D, "recops.", kOp, ": k ", shape_str(a.k.shape()),
               " must have q's head dim D=", D);
  RECOPS_CHECK(Nk > 0 && Nq > 0 && Nq % Nk == 0, "recops.", kOp,
               ": the query heads must be a positive multiple of the KV heads; got Nq=", Nq,
               ", Nk=", Nk);
  RECOPS_CHECK(a.sparse_block_size > 0, "recops.", kOp, ": sparse_block_size=", a.sparse_block_size,
               " must be > 0 (the indexer's stem_block_size)");
  if (a.softmax_scale)
    RECOPS_CHECK(std::isfinite(*a.softmax_scale), "recops.", kOp,
                 ": softmax_scale=", *a.softmax_scale, " must be finite");
  for (const auto* t :
       {&a.k, &a.v, &a.sparse_indices, &a.sparse_seq_len, &a.cu_seqlens_q, &a.kv_seq_lens})
    RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "the other tensors", *t));
  if (paged) RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "block_table", *a.block_table));
  if (!paged)
    RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "cu_seqlens_kv", *a.cu_seqlens_kv));
  for (const auto* t : {&a.q, &a.k, &a.v})
    RECOPS_CHECK(t->strides[t->ndim - 1] == 1 || t->sizes[t->ndim - 1] <= 1, "recops.", kOp,
                 ": q, k and v must have last stride 1 (the binding copies other layouts)");
  return Status::Ok();
}

}  // namespace

Status block_sparse_attention_shape(const BlockSparseAttentionArgs& a, Shape* out, Shape* lse) {
  RECOPS_RETURN_IF_ERROR(check_meta(a));
  *out = a.q.shape();
  *lse = {a.q.sizes[1], a.q.sizes[0]};
  return Status::Ok();
}

namespace {
// Validation of the outputs and the contents, and the flat parameters.
Status make_params(const BlockSparseAttentionArgs& a, const TensorView& out, const TensorView& lse,
                   const Context& ctx, ops::BlockSparseAttentionParams* pp) {
  ops::BlockSparseAttentionParams& p = *pp;
  Shape so, sl;
  RECOPS_RETURN_IF_ERROR(block_sparse_attention_shape(a, &so, &sl));
  RECOPS_CHECK(out.dtype == a.q.dtype && out.shape() == so && out.is_contiguous(), "recops.", kOp,
               ": out must be a contiguous ", dtype_name(a.q.dtype), " ", shape_str(so), ", got ",
               describe(out));
  RECOPS_CHECK(lse.dtype == DType::fp32 && lse.shape() == sl && lse.is_contiguous(), "recops.", kOp,
               ": lse must be a contiguous fp32 ", shape_str(sl), ", got ", describe(lse));
  RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "out", out));
  RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "lse", lse));
  const bool paged = a.block_table.has_value();
  p.dtype = a.q.dtype;
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  p.q_tok_stride = a.q.strides[0];
  p.q_head_stride = a.q.strides[1];
  p.paged = paged;
  const int o = paged ? 1 : 0;
  p.k_tok_stride = a.k.strides[o];
  p.k_head_stride = a.k.strides[o + 1];
  p.v_tok_stride = a.v.strides[o];
  p.v_head_stride = a.v.strides[o + 1];
  if (paged) {
    p.k_page_stride = a.k.strides[0];
    p.v_page_stride = a.v.strides[0];
    p.page_size = a.k.sizes[1];
    p.num_pages = a.k.sizes[0];
    p.max_pages = a.block_table->sizes[1];
  }
  p.indices = static_cast<const int32_t*>(a.sparse_indices.data);
  p.seq_len = static_cast<const int32_t*>(a.sparse_seq_len.data);
  p.out = out.data;
  p.lse = static_cast<float*>(lse.data);
  p.B = a.sparse_indices.sizes[0];
  p.Nq = a.q.sizes[1];
  p.Nk = a.k.sizes[a.k.ndim - 2];
  p.G = p.Nq / p.Nk;
  p.D = a.q.sizes[2];
  p.Tq = a.q.sizes[0];
  p.Qmax = a.sparse_indices.sizes[2];
  p.Kmax = a.sparse_indices.sizes[3];
  p.Bs = a.sparse_block_size;
  p.scale = a.softmax_scale ? *a.softmax_scale : 1.0 / std::sqrt(static_cast<double>(p.D));
  p.causal = a.causal;
  p.device_index = a.q.device.index;
  set_device_index_tensors(a, paged, &p);
  p.Tk = a.k.sizes[0];

  if (value_checks_on(a.q, ctx)) {
    RECOPS_RETURN_IF_ERROR(read_int32(a.cu_seqlens_q, &p.cu_q, ctx));
    RECOPS_RETURN_IF_ERROR(read_int32(a.kv_seq_lens, &p.Lk, ctx));
    RECOPS_CHECK(p.cu_q[0] == 0, "recops.", kOp, ": cu_seqlens_q[0]=", p.cu_q[0], " must be 0");
    for (int64_t b = 0; b < p.B; ++b) {
      const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b];
      RECOPS_CHECK(Lq >= 0, "recops.", kOp,
                   ": cu_seqlens_q must be monotone (non-decreasing); b=", b, ": cu_seqlens_q[",
                   b + 1, "]=", p.cu_q[b + 1], " < cu_seqlens_q[", b, "]=", p.cu_q[b]);
      RECOPS_CHECK(p.Lk[b] >= 0, "recops.", kOp, ": kv_seq_lens[", b, "]=", p.Lk[b],
                   " must be >= 0");
      RECOPS_CHECK(Lq <= p.Qmax * p.Bs, "recops.", kOp, ": batch ", b, ": q length ", Lq,
                   " exceeds the limit Qmax·sparse_block_size = ", p.Qmax * p.Bs);
      RECOPS_CHECK(p.Lk[b] <= p.Kmax * p.Bs, "recops.", kOp, ": kv_seq_lens[", b, "]=", p.Lk[b],
                   " exceeds the limit Kmax·sparse_block_size = ", p.Kmax * p.Bs);
    }
    RECOPS_CHECK(p.cu_q[p.B] <= p.Tq, "recops.", kOp, ": cu_seqlens_q[B]=", p.cu_q[p.B],
                 " exceeds q's token count Tq=", p.Tq);
    if (paged) {
      RECOPS_RETURN_IF_ERROR(read_int32(
          TensorView(a.block_table->data, DType::int32, a.block_table->device, {p.B * p.max_pages}),
          &p.table, ctx));
      for (int64_t b = 0; b < p.B; ++b) {
        const int64_t np = ceil_div(p.Lk[b], p.page_size);
        RECOPS_CHECK(np <= p.max_pages, "recops.", kOp, ": kv_seq_lens[", b, "]=", p.Lk[b],
                     " needs ", np, " pages but block_table has max_pages=", p.max_pages);
        for (int64_t q = 0; q < np; ++q) {
          const int64_t id = p.table[b * p.max_pages + q];
          RECOPS_CHECK(id >= 0 && id < p.num_pages, "recops.", kOp, ": block_table[", b, ", ", q,
                       "]=", id, " is not a page id in [0, ", p.num_pages, ")");
        }
      }
    } else {
      RECOPS_RETURN_IF_ERROR(read_int32(*a.cu_seqlens_kv, &p.cu_kv, ctx));
      for (int64_t b = 0; b < p.B; ++b) {
        RECOPS_CHECK(p.cu_kv[b] >= 0 && p.cu_kv[b + 1] >= p.cu_kv[b], "recops.", kOp,
                     ": cu_seqlens_kv must be monotone (non-decreasing) from >= 0; b=", b);
        RECOPS_CHECK(p.cu_kv[b] + p.Lk[b] <= a.k.sizes[0], "recops.", kOp, ": batch ", b,
                     ": cu_seqlens_kv[b] + kv_seq_lens[b] = ", p.cu_kv[b] + p.Lk[b],
                     " exceeds k's token count Tk=", a.k.sizes[0]);
      }
    }
    // E20: the valid prefixes (host copies on CUDA).
    std::vector<int64_t> lens, ids;
    RECOPS_RETURN_IF_ERROR(read_int32(
        TensorView(a.sparse_seq_len.data, DType::int32, a.q.device, {a.sparse_seq_len.numel()}),
        &lens, ctx));
    RECOPS_RETURN_IF_ERROR(read_int32(
        TensorView(a.sparse_indices.data, DType::int32, a.q.device, {a.sparse_indices.numel()}),
        &ids, ctx));
    std::vector<int64_t> seen(static_cast<size_t>(p.Kmax), -1);
    for (int64_t b = 0; b < p.B; ++b) {
      const int64_t Kb = ceil_div(p.Lk[b], p.Bs);
      for (int64_t hq = 0; hq < p.Nq; ++hq)
        for (int64_t i = 0; i < p.Qmax; ++i) {
          const int64_t row = (b * p.Nq + hq) * p.Qmax + i, L = lens[row];
          RECOPS_CHECK(L >= 0 && L <= p.Kmax, "recops.", kOp, ": sparse_seq_len[", b, ", ", hq,
                       ", ", i, "]=", L, " must lie in [0, Kmax=", p.Kmax, "]");
          for (int64_t t = 0; t < L; ++t) {
            const int64_t j = ids[row * p.Kmax + t];
            RECOPS_CHECK(j >= 0 && j < Kb, "recops.", kOp, ": sparse_indices[", b, ", ", hq, ", ",
                         i, "] holds id ", j, ", outside [0, Kb=", Kb, ")");
            RECOPS_CHECK(seen[j] != row, "recops.", kOp, ": sparse_indices[", b, ", ", hq, ", ", i,
                         "] holds id ", j, " twice (ids must be unique)");
            seen[j] = row;
          }
        }
    }
  }
  return Status::Ok();
}
}  // namespace

Status block_sparse_attention(const BlockSparseAttentionArgs& a, const TensorView& out,
                              const TensorView& lse, const Context& ctx) {
  ops::BlockSparseAttentionParams p;
  RECOPS_RETURN_IF_ERROR(make_params(a, out, lse, ctx, &p));
  if (out.numel() == 0 && lse.numel() == 0) return Status::Ok();
  return core::dispatch(kOp, ops::impls(), a.q.device.type, p, ctx);
}

Status block_sparse_attention_plain(const BlockSparseAttentionArgs& a, const TensorView& out,
                                    const TensorView& lse) {
  RECOPS_CHECK(a.q.device.is_cpu(), "recops.", kOp, ": the plain baseline runs on the CPU only");
  ops::BlockSparseAttentionParams p;
  RECOPS_RETURN_IF_ERROR(make_params(a, out, lse, Context{}, &p));
  if (out.numel() == 0 && lse.numel() == 0) return Status::Ok();
  return ops::block_sparse_attention_plain_impl(p);
}

}  // namespace recops

// ---- the argument table (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
Status bsa_shapes(const BlockSparseAttentionArgs& a, std::vector<kit::OutSpec>* outs) {
  // The layouts of the table's dense_from (the binding's copies; a Meta call gets none).
  BlockSparseAttentionArgs b = a;
  b.q = stem::inner_dense_layout(a.q);
  b.k = stem::inner_dense_layout(a.k);
  b.v = stem::inner_dense_layout(a.v);
  b.sparse_indices = stem::dense_layout(a.sparse_indices);
  b.sparse_seq_len = stem::dense_layout(a.sparse_seq_len);
  b.cu_seqlens_q = stem::inner_dense_layout(a.cu_seqlens_q);
  b.kv_seq_lens = stem::inner_dense_layout(a.kv_seq_lens);
  b.cu_seqlens_kv = stem::inner_dense_layout(a.cu_seqlens_kv);
  b.block_table = stem::dense_layout(a.block_table);
  Shape so, sl;
  RECOPS_RETURN_IF_ERROR(block_sparse_attention_shape(b, &so, &sl));
  outs->push_back({so, a.q.dtype});
  outs->push_back({sl, DType::fp32});
  return Status::Ok();
}

Status bsa_run(const BlockSparseAttentionArgs& a, const kit::Outputs& o, const Context& ctx) {
  return block_sparse_attention(a, o.views[0], o.views[1], ctx);
}

constexpr const char* kDoc =
    R"(Softmax attention over the selected key blocks only (spec §7). Query token ``t`` of
batch ``b`` (block ``i = t // Bs``) attends to the keys ``s`` of its row's selected blocks
with ``s < Lk`` and, when causal, ``s <= Lk - Lq + t`` (right-down, cut at token level); GQA
maps query head ``hq`` to KV head ``hq // (Nq/Nk)``; fp32 softmax; a row without keys gives
0 and ``lse = -inf``.

Args:
    q: bf16/fp16 ``[Tq, Nq, D]``; k, v: packed ``[Tk, Nk, D]`` (``cu_seqlens_kv``) or paged
        ``[pages, page_size, Nk, D]`` (``block_table``).
    sparse_indices, sparse_seq_len: ``stem_indexer``'s outputs (ids unique, in ``[0, Kb)``).
    softmax_scale: default ``1/sqrt(D)``.
Returns:
    ``out`` ``[Tq, Nq, D]`` in q's dtype and ``lse`` fp32 ``[Nq, Tq]`` (natural log).
)";
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using A = recops::BlockSparseAttentionArgs;
  reg.add(recops::ops::block_sparse_attention_info());
  // Dense layouts (the binding copies others): q, k, v and the index vectors in their last dim,
  // the selection and block_table whole (as bsa_shapes assumes for a Meta call).
  constexpr int kInner = -2, kWhole = 0;
  reg.add(
      recops::kit::Def<A>("block_sparse_attention", "stem")
          .value_errors()  // stem_indexer.md §10: ValueError, TypeError for dtypes
          .forward_only()  // no gradient (stem_indexer.md)
          .arg<&A::q>("q", {.dense_from = kInner})
          .arg<&A::k>("k", {.dense_from = kInner})
          .arg<&A::v>("v", {.dense_from = kInner})
          .arg<&A::sparse_indices>("sparse_indices", {.dense_from = kWhole})
          .arg<&A::sparse_seq_len>("sparse_seq_len", {.dense_from = kWhole})
          .arg<&A::cu_seqlens_q>("cu_seqlens_q", {.kw = true, .dense_from = kInner})
          .arg<&A::kv_seq_lens>("kv_seq_lens", {.kw = true, .dense_from = kInner})
          .arg<&A::cu_seqlens_kv>("cu_seqlens_kv",
                                  {.def = "None", .kw = true, .dense_from = kInner})
          .arg<&A::block_table>("block_table", {.def = "None", .kw = true, .dense_from = kWhole})
          .arg<&A::softmax_scale>("softmax_scale", {.def = "None", .kw = true})
          .arg<&A::causal>("causal", {.def = "True", .kw = true})
          .arg<&A::sparse_block_size>("sparse_block_size", {.def = "128", .kw = true})
          .out("out", false)
          .out("lse", false)
          .shapes(recops::ops::bsa_shapes)
          .run(recops::ops::bsa_run)
          .doc("", recops::ops::kDoc));
}
