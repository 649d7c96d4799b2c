// stem/common/stem_common.h: entry helpers shared by the Stem family (stem_prepare,
// stem_indexer, stem_indexer_metadata, block_sparse_attention): argument checks whose messages
// follow spec §10 ("recops.<op>: <argument> ..."), and host reads of int32 vectors.
//
// Type errors (spec E1-E3, E19 dtype mix) say "must have dtype"; the torch binding raises
// TypeError for them, ValueError for the other invalid_argument reasons.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/dispatch.h"
#include "ops/stem/common/qkv_params.h"
#include "ops/stem/common/stem_rules.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::stem {

// ---- the implementation lists ----

// can_implement of a CUDA implementation: compute capability kMinCc on the tensors' device, then
// the implementation's own reason.
template <int kMinCc, class P, std::string (*kReason)(const P&)>
std::string cuda_can_implement(const P& p) {
  std::string why = core::cuda_capability_at_least<kMinCc, P>(p);
  return why.empty() ? kReason(p) : why;
}

// An op's implementation list: the CUDA ones (best first), then cpu_generic, then the reference.
using core::with_cpu_impls;

// ---- argument checks ----

inline Status check_dtype(const std::string& op, const char* arg, const TensorView& t, DType want,
                          const char* want_name) {
  RECOPS_CHECK_TYPE(t.dtype == want, "recops.", op, ": ", arg, " must have dtype ", want_name,
                    ", got ", dtype_name(t.dtype));
  return Status::Ok();
}

inline Status check_rank(const std::string& op, const char* arg, const TensorView& t, int rank,
                         const char* layout) {
  RECOPS_CHECK(t.ndim == rank, "recops.", op, ": ", arg, " must be ", rank, "-D ", layout,
               ", got rank ", t.ndim, " (shape ", shape_str(t.shape()), ")");
  return Status::Ok();
}

// a·b, or INT64_MAX where the product overflows (for limits that bound lengths, which are int32).
inline int64_t mul_saturated(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

// *out = a·b of a size, or an error naming the op, the size and both factors.
inline Status checked_mul(const std::string& op, const char* size, const char* a_name, int64_t a,
                          const char* b_name, int64_t b, int64_t* out) {
  RECOPS_CHECK(!__builtin_mul_overflow(a, b, out), "recops.", op, ": ", size, " = ", a_name, "·",
               b_name, " = ", a, "·", b, " overflows int64");
  return Status::Ok();
}

// An attribute that is stored or computed as int32 (the plan's words, int32 lengths): refused
// where it does not fit.
inline Status check_fits_int32(const std::string& op, const char* arg, int64_t v) {
  RECOPS_CHECK(v >= INT32_MIN && v <= INT32_MAX, "recops.", op, ": ", arg, "=", v,
               " does not fit in int32 (must lie in [-2^31, 2^31-1])");
  return Status::Ok();
}

inline Status check_device(const std::string& op, const char* a_name, const TensorView& a,
                           const char* b_name, const TensorView& b) {
  RECOPS_CHECK(a.device == b.device, "recops.", op, ": every tensor must be on one device; ",
               a_name, " is on ", a.device.str(), ", ", b_name, " on ", b.device.str());
  return Status::Ok();
}

// True when this call reads tensor contents on the host (CPU always; CUDA when value checks are
// on and the stream is not capturing).
inline bool value_checks_on(const TensorView& t, const Context& ctx) {
  if (t.device.is_cpu()) return true;
  return validate_enabled() && !core::cuda::stream_capturing(ctx.stream);
}

// The int32 elements of a 1-D (or flattened contiguous) tensor, as int64 on the host.
inline Status read_int32(const TensorView& t, std::vector<int64_t>* out, const Context& ctx,
                         std::vector<int32_t>* raw = nullptr) {
  const int64_t n = t.numel();
  const int64_t stride = t.ndim == 1 ? t.strides[0] : 1;
  std::vector<int32_t> tmp(static_cast<size_t>(n));
  if (n > 0) {
    if (t.device.is_cpu()) {
      const auto* p = static_cast<const int32_t*>(t.data);
      for (int64_t i = 0; i < n; ++i) tmp[static_cast<size_t>(i)] = p[i * stride];
    } else {
      RECOPS_RETURN_IF_ERROR(core::cuda::copy_strided_to_host(tmp.data(), t.data, 4, n, stride,
                                                              t.device.index, ctx.stream));
    }
  }
  out->assign(tmp.begin(), tmp.end());
  if (raw) *raw = std::move(tmp);
  return Status::Ok();
}

// ---- for the ops' argument tables (the kit's shape functions) ----
// The torch binding copies a tensor whose layout the entry refuses (all of it, or its last dim)
// before a real call, but hands a Meta call its tensors as given; the shape function of a Meta
// call sees them through these, as the real call will. Data pointers are kept.
inline TensorView dense_layout(const TensorView& t) {
  return TensorView(t.data, t.dtype, t.device, t.shape());
}
inline std::optional<TensorView> dense_layout(const std::optional<TensorView>& t) {
  return t ? std::optional<TensorView>(dense_layout(*t)) : std::nullopt;
}
inline TensorView inner_dense_layout(TensorView t) {
  if (t.ndim > 0 && t.sizes[t.ndim - 1] > 1) t.strides[t.ndim - 1] = 1;
  return t;
}
inline std::optional<TensorView> inner_dense_layout(const std::optional<TensorView>& t) {
  return t ? std::optional<TensorView>(inner_dense_layout(*t)) : std::nullopt;
}
// A tensor with elements but no data: a Meta (shape-only) call, whose contents cannot be read.
inline bool shape_only(const TensorView& t) {
  return t.data == nullptr && t.numel() > 0;
}

// An output tensor as the entry allocates it: contiguous, of this dtype and shape.
inline Status check_output(const std::string& op, const char* arg, const TensorView& t, DType want,
                           const Shape& shape) {
  RECOPS_CHECK(t.dtype == want && t.shape() == shape && t.is_contiguous(), "recops.", op, ": ", arg,
               " must be a contiguous ", dtype_name(want), " ", shape_str(shape), ", got ",
               describe(t));
  return Status::Ok();
}

// ---- the ops that take q [Tq, Nq, D] packed by cu_seqlens_q [B+1] with kv_seq_lens [B], and
// k/v packed [Tk, Nk, ·] by cu_seqlens_kv [B+1] or paged [pages, page_size, Nk, ·] by
// block_table [B, max_pages]: stem_prepare and block_sparse_attention (their Args share these
// names, their params the QkvParams base). ----

// q is bf16 or fp16 (or fp8_e4m3 where `fp8`); k and v have q's dtype.
template <class Args>
Status check_qkv_dtype(const std::string& op, const Args& a, bool fp8) {
  const DType t = a.q.dtype;
  RECOPS_CHECK_TYPE(t == DType::bf16 || t == DType::fp16 || (fp8 && t == DType::fp8_e4m3),
                    "recops.", op, ": q must have dtype ",
                    fp8 ? "bfloat16, float16 or float8_e4m3fn" : "bfloat16 or float16", ", got ",
                    dtype_name(t));
  RECOPS_CHECK_TYPE(a.k.dtype == a.q.dtype && a.v.dtype == a.q.dtype, "recops.", op,
                    ": q, k and v must have dtype the same dtype (no dtype mix); got q ",
                    dtype_name(a.q.dtype), ", k ", dtype_name(a.k.dtype), ", v ",
                    dtype_name(a.v.dtype));
  return Status::Ok();
}

// q's rank, exactly one K/V layout and the ranks of k and v; `dv` names v's last dim.
template <class Args>
Status check_qkv_ranks(const std::string& op, const Args& a, const std::string& dv) {
  RECOPS_RETURN_IF_ERROR(check_rank(op, "q", a.q, 3, "[Tq, Nq, D]"));
  RECOPS_CHECK(a.cu_seqlens_kv.has_value() != a.block_table.has_value(), "recops.", op,
               ": give exactly one of cu_seqlens_kv (packed K/V) and block_table (paged K/V); got ",
               a.cu_seqlens_kv ? "both" : "neither");
  const bool paged = a.block_table.has_value();
  const int kr = paged ? 4 : 3;
  RECOPS_RETURN_IF_ERROR(
      check_rank(op, "k", a.k, kr, paged ? "[pages, page_size, Nk, D]" : "[Tk, Nk, D]"));
  const std::string vl = (paged ? "[pages, page_size, Nk, " : "[Tk, Nk, ") + dv + "]";
  return check_rank(op, "v", a.v, kr, vl.c_str());
}

// The K/V index tensor's dtype and rank (and cu_seqlens_kv's size B+1).
template <class Args>
Status check_kv_index_meta(const std::string& op, const Args& a, int64_t B) {
  if (a.block_table) {
    RECOPS_RETURN_IF_ERROR(check_dtype(op, "block_table", *a.block_table, DType::int32, "int32"));
    return check_rank(op, "block_table", *a.block_table, 2, "[B, max_pages]");
  }
  RECOPS_RETURN_IF_ERROR(check_dtype(op, "cu_seqlens_kv", *a.cu_seqlens_kv, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_rank(op, "cu_seqlens_kv", *a.cu_seqlens_kv, 1, "[B+1]"));
  RECOPS_CHECK(a.cu_seqlens_kv->sizes[0] == B + 1, "recops.", op, ": cu_seqlens_kv has shape ",
               shape_str(a.cu_seqlens_kv->shape()), ", expected [B+1] = [", B + 1, "]");
  return Status::Ok();
}

// Nq query heads over Nk KV heads: a positive multiple, or both 0 (an empty product, whose
// outputs are empty).
inline bool heads_ok(int64_t Nq, int64_t Nk) {
  return (Nq == 0 && Nk == 0) || (Nk > 0 && Nq > 0 && Nq % Nk == 0);
}

// k has q's head dim; the query heads are a positive multiple of the KV heads (or both 0).
template <class Args>
Status check_heads(const std::string& op, const Args& a) {
  const int64_t Nq = a.q.sizes[1], D = a.q.sizes[2], Nk = a.k.sizes[a.k.ndim - 2];
  RECOPS_CHECK(a.k.sizes[a.k.ndim - 1] == D, "recops.", op, ": k ", shape_str(a.k.shape()),
               " must have q's head dim D=", D);
  RECOPS_CHECK(heads_ok(Nq, Nk), "recops.", op,
               ": the query heads must be a positive multiple of the KV heads (or both 0); got "
               "Nq=",
               Nq, ", Nk=", Nk);
  return Status::Ok();
}

// The K/V index tensor is on q's device; q, k and v have last stride 1.
template <class Args>
Status check_kv_index_device_and_strides(const std::string& op, const Args& a) {
  if (a.block_table)
    RECOPS_RETURN_IF_ERROR(check_device(op, "q", a.q, "block_table", *a.block_table));
  else
    RECOPS_RETURN_IF_ERROR(check_device(op, "q", a.q, "cu_seqlens_kv", *a.cu_seqlens_kv));
  for (const auto* t : {&a.q, &a.k, &a.v})
    RECOPS_CHECK(t->strides[t->ndim - 1] == 1 || t->sizes[t->ndim - 1] <= 1, "recops.", op,
                 ": q, k and v must have last stride 1 (the binding copies other layouts)");
  return Status::Ok();
}

// Pointers, strides, the page geometry, the token counts, B, the heads, D and the index tensors
// as the CUDA kernels read them (device pointers and element strides); the op sets the blocks.
template <class Args>
void set_qkv(const Args& a, QkvParams* p) {
  const bool paged = a.block_table.has_value();
  p->dtype = a.q.dtype;
  p->q = a.q.data;
  p->k = a.k.data;
  p->v = a.v.data;
  p->q_tok_stride = a.q.strides[0];
  p->q_head_stride = a.q.strides[1];
  p->paged = paged;
  const int o = paged ? 1 : 0;
  p->k_tok_stride = a.k.strides[o];
  p->k_head_stride = a.k.strides[o + 1];
  p->v_tok_stride = a.v.strides[o];
  p->v_head_stride = a.v.strides[o + 1];
  if (paged) {
    p->k_page_stride = a.k.strides[0];
    p->v_page_stride = a.v.strides[0];
    p->page_size = a.k.sizes[1];
    p->num_pages = a.k.sizes[0];
    p->max_pages = a.block_table->sizes[1];
  }
  p->Tq = a.q.sizes[0];
  p->Tk = a.k.sizes[0];
  p->B = a.kv_seq_lens.sizes[0];
  p->Nq = a.q.sizes[1];
  p->Nk = a.k.sizes[a.k.ndim - 2];
  p->D = a.q.sizes[2];
  p->device_index = a.q.device.index;
  p->d_cu_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
  p->d_cu_q_stride = a.cu_seqlens_q.strides[0];
  p->d_lk = static_cast<const int32_t*>(a.kv_seq_lens.data);
  p->d_lk_stride = a.kv_seq_lens.strides[0];
  if (paged) {
    p->d_table = static_cast<const int32_t*>(a.block_table->data);
  } else {
    p->d_cu_kv = static_cast<const int32_t*>(a.cu_seqlens_kv->data);
    p->d_cu_kv_stride = a.cu_seqlens_kv->strides[0];
  }
}

// Host copies of cu_seqlens_q and kv_seq_lens with their value rules (spec §10): cu_seqlens_q
// starts at 0, is monotone and ends within q's tokens; kv_seq_lens >= 0.
template <class Args>
Status read_q_kv_lengths(const std::string& op, const Args& a, std::vector<int64_t>* cu_q,
                         std::vector<int64_t>* Lk, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(read_int32(a.cu_seqlens_q, cu_q, ctx));
  RECOPS_RETURN_IF_ERROR(read_int32(a.kv_seq_lens, Lk, ctx));
  const int64_t B = static_cast<int64_t>(Lk->size());
  RECOPS_CHECK((*cu_q)[0] == 0, "recops.", op, ": cu_seqlens_q[0]=", (*cu_q)[0], " must be 0");
  for (int64_t b = 0; b < B; ++b) {
    RECOPS_CHECK((*cu_q)[b + 1] >= (*cu_q)[b], "recops.", op,
                 ": cu_seqlens_q must be monotone (non-decreasing); b=", b, ": cu_seqlens_q[",
                 b + 1, "]=", (*cu_q)[b + 1], " < cu_seqlens_q[", b, "]=", (*cu_q)[b]);
    RECOPS_CHECK((*Lk)[b] >= 0, "recops.", op, ": kv_seq_lens[", b, "]=", (*Lk)[b],
                 " must be >= 0");
  }
  RECOPS_CHECK((*cu_q)[B] <= a.q.sizes[0], "recops.", op, ": cu_seqlens_q[B]=", (*cu_q)[B],
               " exceeds q's token count Tq=", a.q.sizes[0]);
  return Status::Ok();
}

// Host copies of block_table (paged: each batch's pages are page ids) or cu_seqlens_kv (packed:
// monotone from >= 0, each batch within k's tokens) into p; p->Lk and the page geometry are set.
template <class Args>
Status read_kv_index(const std::string& op, const Args& a, int64_t B, QkvParams* p,
                     const Context& ctx) {
  if (p->paged) {
    RECOPS_RETURN_IF_ERROR(read_int32(
        TensorView(a.block_table->data, DType::int32, a.block_table->device, {B * p->max_pages}),
        &p->table, ctx));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t np = ceil_div(p->Lk[b], p->page_size);
      RECOPS_CHECK(np <= p->max_pages, "recops.", op, ": kv_seq_lens[", b, "]=", p->Lk[b],
                   " needs ", np, " pages but block_table has max_pages=", p->max_pages);
      for (int64_t q = 0; q < np; ++q) {
        const int64_t id = p->table[b * p->max_pages + q];
        RECOPS_CHECK(id >= 0 && id < p->num_pages, "recops.", op, ": block_table[", b, ", ", q,
                     "]=", id, " is not a page id in [0, ", p->num_pages, ")");
      }
    }
    return Status::Ok();
  }
  RECOPS_RETURN_IF_ERROR(read_int32(*a.cu_seqlens_kv, &p->cu_kv, ctx));
  for (int64_t b = 0; b < B; ++b) {
    RECOPS_CHECK(p->cu_kv[b] >= 0 && p->cu_kv[b + 1] >= p->cu_kv[b], "recops.", op,
                 ": cu_seqlens_kv must be monotone (non-decreasing) from >= 0; b=", b);
    RECOPS_CHECK(p->cu_kv[b] + p->Lk[b] <= a.k.sizes[0], "recops.", op, ": batch ", b,
                 ": cu_seqlens_kv[b] + kv_seq_lens[b] = ", p->cu_kv[b] + p->Lk[b],
                 " exceeds k's token count Tk=", a.k.sizes[0]);
  }
  return Status::Ok();
}

// Host copies of all the index tensors into p (B batches), with the rules of read_q_kv_lengths
// and read_kv_index; `limits(b)` checks the op's own rules of batch b in between.
template <class Args, class Limits>
Status read_qkv_indices(const std::string& op, const Args& a, int64_t B, QkvParams* p,
                        const Context& ctx, Limits limits) {
  RECOPS_RETURN_IF_ERROR(read_q_kv_lengths(op, a, &p->cu_q, &p->Lk, ctx));
  for (int64_t b = 0; b < B; ++b) RECOPS_RETURN_IF_ERROR(limits(b));
  return read_kv_index(op, a, B, p, ctx);
}

// The layouts the binding gives q, k, v and the index tensors (dense_from: the last dim, the
// whole block_table), which the shape function of a Meta call assumes.
template <class Args>
void dense_qkv_layouts(Args* b) {
  b->q = inner_dense_layout(b->q);
  b->k = inner_dense_layout(b->k);
  b->v = inner_dense_layout(b->v);
  b->cu_seqlens_q = inner_dense_layout(b->cu_seqlens_q);
  b->kv_seq_lens = inner_dense_layout(b->kv_seq_lens);
  b->cu_seqlens_kv = inner_dense_layout(b->cu_seqlens_kv);
  b->block_table = dense_layout(b->block_table);
}

}  // namespace recops::ops::stem
