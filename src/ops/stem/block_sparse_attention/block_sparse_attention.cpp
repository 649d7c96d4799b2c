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

const std::vector<core::Impl<P>>& impls() {
  using stem::cuda_can_implement;
  static const std::vector<core::Impl<P>> list = stem::with_cpu_impls<P>(
      {
#ifdef RECOPS_WITH_CUDA
          {"cuda_sm90", DeviceType::cuda, core::cuda::any_device_reason,
           cuda_can_implement<90, P, block_sparse_attention_cuda_sm90_reason>,
           block_sparse_attention_cuda_sm90},
          {"cuda_sm80_fa", DeviceType::cuda, core::cuda::any_device_reason,
           cuda_can_implement<80, P, block_sparse_attention_cuda_fa_reason>,
           block_sparse_attention_cuda_fa, block_sparse_attention_cuda_fa_candidates},
          {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason,
           cuda_can_implement<80, P, block_sparse_attention_cuda_reason>,
           block_sparse_attention_cuda},
#endif
      },
      block_sparse_attention_cpu, block_sparse_attention_reference);
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
  RECOPS_RETURN_IF_ERROR(check_qkv_dtype(kOp, a, /*fp8=*/false));
  RECOPS_RETURN_IF_ERROR(
      check_dtype(kOp, "sparse_indices", a.sparse_indices, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(
      check_dtype(kOp, "sparse_seq_len", a.sparse_seq_len, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_dtype(kOp, "cu_seqlens_q", a.cu_seqlens_q, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_dtype(kOp, "kv_seq_lens", a.kv_seq_lens, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_qkv_ranks(kOp, a, "D"));
  const bool paged = a.block_table.has_value();
  RECOPS_RETURN_IF_ERROR(
      check_rank(kOp, "sparse_indices", a.sparse_indices, 4, "[B, Nq, Qmax, Kmax]"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "sparse_seq_len", a.sparse_seq_len, 3, "[B, Nq, Qmax]"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "cu_seqlens_q", a.cu_seqlens_q, 1, "[B+1]"));
  RECOPS_RETURN_IF_ERROR(check_rank(kOp, "kv_seq_lens", a.kv_seq_lens, 1, "[B]"));
  const int64_t B = a.sparse_indices.sizes[0], Nq = a.q.sizes[1];
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
  RECOPS_RETURN_IF_ERROR(check_kv_index_meta(kOp, a, B));
  if (paged) {
    RECOPS_CHECK(a.block_table->sizes[0] == B && a.block_table->is_contiguous(), "recops.", kOp,
                 ": block_table must be a contiguous [B, max_pages] with B=", B, ", got ",
                 shape_str(a.block_table->shape()));
    RECOPS_CHECK(a.k.shape() == a.v.shape() && a.k.sizes[1] > 0, "recops.", kOp, ": k ",
                 shape_str(a.k.shape()), " and v ", shape_str(a.v.shape()),
                 " must have one shape with page_size > 0");
  } else {
    RECOPS_CHECK(a.k.shape() == a.v.shape(), "recops.", kOp, ": k ", shape_str(a.k.shape()),
                 " and v ", shape_str(a.v.shape()), " must have one shape (Dv = D)");
  }
  RECOPS_RETURN_IF_ERROR(check_heads(kOp, a));
  RECOPS_CHECK(a.sparse_block_size > 0, "recops.", kOp, ": sparse_block_size=", a.sparse_block_size,
               " must be > 0 (the indexer's stem_block_size)");
  if (a.softmax_scale)
    RECOPS_CHECK(std::isfinite(*a.softmax_scale), "recops.", kOp,
                 ": softmax_scale=", *a.softmax_scale, " must be finite");
  for (const auto* t :
       {&a.k, &a.v, &a.sparse_indices, &a.sparse_seq_len, &a.cu_seqlens_q, &a.kv_seq_lens})
    RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "the other tensors", *t));
  return check_kv_index_device_and_strides(kOp, a);
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
  RECOPS_RETURN_IF_ERROR(check_output(kOp, "out", out, a.q.dtype, so));
  RECOPS_RETURN_IF_ERROR(check_output(kOp, "lse", lse, DType::fp32, sl));
  RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "out", out));
  RECOPS_RETURN_IF_ERROR(check_device(kOp, "q", a.q, "lse", lse));
  set_qkv(a, &p);
  p.indices = static_cast<const int32_t*>(a.sparse_indices.data);
  p.seq_len = static_cast<const int32_t*>(a.sparse_seq_len.data);
  p.out = out.data;
  p.lse = static_cast<float*>(lse.data);
  p.G = p.Nk > 0 ? p.Nq / p.Nk : 0;  // no heads: empty outputs, nothing runs
  p.Qmax = a.sparse_indices.sizes[2];
  p.Kmax = a.sparse_indices.sizes[3];
  p.Bs = a.sparse_block_size;
  // D = 0: every score is the empty dot product 0, so lse = ln(count) for any finite scale
  // (1/sqrt(0) would make it inf·0 = NaN).
  p.scale = a.softmax_scale ? *a.softmax_scale
                            : (p.D > 0 ? 1.0 / std::sqrt(static_cast<double>(p.D)) : 1.0);
  p.causal = a.causal;

  if (value_checks_on(a.q, ctx)) {
    RECOPS_RETURN_IF_ERROR(read_qkv_indices(kOp, a, p.B, &p, ctx, [&](int64_t b) -> Status {
      const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b];
      RECOPS_CHECK(Lq <= mul_saturated(p.Qmax, p.Bs), "recops.", kOp, ": batch ", b, ": q length ",
                   Lq, " exceeds the limit Qmax·sparse_block_size = ", p.Qmax, "·", p.Bs);
      RECOPS_CHECK(p.Lk[b] <= mul_saturated(p.Kmax, p.Bs), "recops.", kOp, ": kv_seq_lens[", b,
                   "]=", p.Lk[b], " exceeds the limit Kmax·sparse_block_size = ", p.Kmax, "·",
                   p.Bs);
      return Status::Ok();
    }));
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
                         i, "] holds id ", j, ", outside [0, Kb=", Kb,
                         ") (Kb = ceil(kv length / sparse_block_size) = ceil(", p.Lk[b], " / ",
                         p.Bs, "))");
            RECOPS_CHECK(seen[j] != row, "recops.", kOp, ": sparse_indices[", b, ", ", hq, ", ", i,
                         "] holds id ", j, " twice (ids must be unique)");
            seen[j] = row;
          }
        }
    }
  }
  // A block at least as long as every sequence makes one block per sequence, whatever its size:
  // a huge sparse_block_size is handed to the implementations as the longest length (or 2^31,
  // above any int32 length, when the lengths are not read), so that their block arithmetic
  // (t0 + Bs, Bs-token buffers) cannot overflow. Sizes up to 2^20 are passed as given.
  if (p.Bs > (int64_t{1} << 20)) {
    int64_t longest = int64_t{1} << 31;
    if (!p.cu_q.empty()) {
      longest = 1;
      for (int64_t b = 0; b < p.B; ++b)
        longest = std::max({longest, p.cu_q[b + 1] - p.cu_q[b], p.Lk[b]});
    }
    p.Bs = std::min(p.Bs, longest);
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
  stem::dense_qkv_layouts(&b);
  b.sparse_indices = stem::dense_layout(a.sparse_indices);
  b.sparse_seq_len = stem::dense_layout(a.sparse_seq_len);
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
    softmax_scale: default ``1/sqrt(D)`` (1 when D = 0).
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
