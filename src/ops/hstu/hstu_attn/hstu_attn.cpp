// hstu_attn: the entry (hstu_attention.md). All validation of spec §5 happens here, once; then
// the ordered implementation list runs the first implementation that accepts.
//
// Data-dependent rules (offsets, lengths against max_seq_len, contexts/targets, page ids) are
// read from CPU tensors, and from CUDA tensors when validation is enabled outside graph capture
// (check_data); the CUDA kernels never read offsets on the host.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/hstu/hstu_attn/impls.h"
#include "recops/hstu.h"

namespace recops::ops {
namespace {
constexpr const char* kFwd = "hstu_attn_fwd";
constexpr const char* kBwd = "hstu_attn_bwd";
using P = HstuAttnParams;

const std::vector<core::Impl<P>>& fwd_impls() {
  static const std::vector<core::Impl<P>> list = {
#ifdef RECOPS_WITH_CUDA
      {"cuda_sm90", DeviceType::cuda, core::cuda::any_device_reason, hstu_attn_fwd_sm90_accepts,
       hstu_attn_fwd_cuda_sm90},
      {"cuda_sm80_fa", DeviceType::cuda, core::cuda::any_device_reason, hstu_attn_fwd_fa_accepts,
       hstu_attn_fwd_cuda_fa},
      {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason, hstu_attn_cuda_accepts,
       hstu_attn_fwd_cuda},
#endif
      {"cpu_avx512_bf16", DeviceType::cpu, hstu_attn_fwd_avx512_bf16_available,
       hstu_attn_fwd_avx512_bf16_accepts, hstu_attn_fwd_cpu_avx512_bf16},
      {"cpu_avx2", DeviceType::cpu, hstu_attn_fwd_avx2_available, hstu_attn_fwd_cpu_accepts,
       hstu_attn_fwd_cpu_avx2},
      {"cpu_generic", DeviceType::cpu, core::always_available, hstu_attn_fwd_cpu_accepts,
       hstu_attn_fwd_cpu},
      {"reference", DeviceType::cpu, core::always_available, core::accept_all<P>,
       hstu_attn_fwd_reference},
  };
  return list;
}

const std::vector<core::Impl<P>>& bwd_impls() {
  static const std::vector<core::Impl<P>> list = {
#ifdef RECOPS_WITH_CUDA
      {"cuda_sm90", DeviceType::cuda, core::cuda::any_device_reason, hstu_attn_bwd_sm90_accepts,
       hstu_attn_bwd_cuda_sm90},
      {"cuda_sm80_fa", DeviceType::cuda, core::cuda::any_device_reason, hstu_attn_bwd_fa_accepts,
       hstu_attn_bwd_cuda_fa},
      {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason, hstu_attn_cuda_accepts,
       hstu_attn_bwd_cuda},
#endif
      {"cpu_avx512", DeviceType::cpu, hstu_attn_avx512_available, hstu_attn_fwd_cpu_accepts,
       hstu_attn_bwd_cpu_avx512},
      {"cpu_avx2", DeviceType::cpu, hstu_attn_fwd_avx2_available, hstu_attn_fwd_cpu_accepts,
       hstu_attn_bwd_cpu_avx2},
      {"cpu_generic", DeviceType::cpu, core::always_available, hstu_attn_fwd_cpu_accepts,
       hstu_attn_bwd_cpu},
      {"reference", DeviceType::cpu, core::always_available, core::accept_all<P>,
       hstu_attn_bwd_reference},
  };
  return list;
}

// fp64 is accepted for gradcheck-style tests (the reference runs it; cpu_generic refuses it).
bool floating_storage(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// [n] int32/int64 per-sequence tensor (num_contexts, num_targets, last_page_len).
Status check_per_seq(const char* op, const char* name, const TensorView& t, int64_t B) {
  RECOPS_CHECK(t.ndim == 1 && t.sizes[0] == B, op, ": ", name, " must be [B] = [", B, "], got ",
               describe(t));
  RECOPS_CHECK(t.dtype == DType::int32 || t.dtype == DType::int64, op, ": ", name,
               " must be int32 or int64, got ", dtype_name(t.dtype));
  return Status::Ok();
}

// Spec §2 and §5 rules that need no tensor contents. Fills the layout part of `p`.
Status check_meta(const char* op, const HstuAttnArgs& a, P* p) {
  const TensorView &q = a.q, &k = a.k, &v = a.v;
  const bool jagged = a.seq_offsets_q.has_value() || a.seq_offsets_k.has_value();
  RECOPS_CHECK(a.seq_offsets_q.has_value() == a.seq_offsets_k.has_value(), op,
               ": give both seq_offsets_q and seq_offsets_k (jagged layout) or neither (dense)");
  const int rank = jagged ? 3 : 4;
  const char* layout = jagged ? "jagged [total, H, d]" : "dense [B, S, H, d]";
  for (const auto& [t, name] : {std::pair{&q, "q"}, {&k, "k"}, {&v, "v"}})
    RECOPS_CHECK(t->ndim == rank, op, ": ", name, " must be ", rank, "-D for the ", layout,
                 " layout, got ", describe(*t));
  RECOPS_CHECK(floating_storage(q.dtype), op, ": q must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(q.dtype));
  RECOPS_CHECK(k.dtype == q.dtype && v.dtype == q.dtype, op, ": k (", dtype_name(k.dtype),
               ") and v (", dtype_name(v.dtype), ") must have q's dtype ", dtype_name(q.dtype));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", q, "k", k));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", q, "v", v));
  const int h = rank - 2;  // the heads dim
  const int64_t Hq = q.sizes[h], Hk = k.sizes[h], d = q.sizes[h + 1], dv = v.sizes[h + 1];
  RECOPS_CHECK(k.sizes[h + 1] == d, op, ": k's head dim ", k.sizes[h + 1], " differs from q's ", d,
               " (q and k share d)");
  RECOPS_CHECK(v.sizes[h] == Hk, op, ": v has ", v.sizes[h], " heads but k has ", Hk,
               " (k and v share Hk)");
  // Zero query heads is an empty product (an empty output); k needs heads whenever q has some.
  RECOPS_CHECK(Hk >= 1 || Hq == 0, op, ": k has no heads (Hk=0) but q has Hq=", Hq,
               " (GQA needs Hq % Hk == 0 with Hk >= 1)");
  RECOPS_CHECK(Hq == 0 || Hq % Hk == 0, op, ": Hq=", Hq, " is not a multiple of Hk=", Hk,
               " (GQA needs Hq % Hk == 0)");
  // An empty tensor addresses no element, so its strides are arbitrary (torch gives any).
  for (const auto& [t, name] : {std::pair{&q, "q"}, {&k, "k"}, {&v, "v"}})
    RECOPS_CHECK(t->numel() == 0 || t->sizes[rank - 1] <= 1 || t->strides[rank - 1] == 1, op, ": ",
                 name, "'s last dim must be contiguous (stride 1), got ", describe(*t));
  RECOPS_CHECK(a.max_seq_len_q >= 0 && a.max_seq_len_k >= 0, op,
               ": max_seq_len_q and max_seq_len_k must be >= 0, got ", a.max_seq_len_q, ", ",
               a.max_seq_len_k);
  int64_t B;
  if (jagged) {
    RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "seq_offsets_q", *a.seq_offsets_q));
    RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "seq_offsets_k", *a.seq_offsets_k));
    B = a.seq_offsets_q->sizes[0] - 1;
    RECOPS_CHECK(a.seq_offsets_k->sizes[0] == B + 1, op, ": seq_offsets_k has ",
                 a.seq_offsets_k->sizes[0], " elements but seq_offsets_q has ", B + 1,
                 " (both [B+1])");
    RECOPS_CHECK(k.sizes[0] == v.sizes[0], op, ": k has ", k.sizes[0], " tokens but v has ",
                 v.sizes[0]);
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", q, "seq_offsets_q", *a.seq_offsets_q));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", q, "seq_offsets_k", *a.seq_offsets_k));
  } else {
    B = q.sizes[0];
    RECOPS_CHECK(k.sizes[0] == B && v.sizes[0] == B, op, ": q, k and v must share B (dense), got ",
                 B, ", ", k.sizes[0], ", ", v.sizes[0]);
    RECOPS_CHECK(k.sizes[1] == v.sizes[1], op, ": k has Sk=", k.sizes[1], " but v has ",
                 v.sizes[1]);
    RECOPS_CHECK(a.max_seq_len_q == q.sizes[1], op, ": max_seq_len_q=", a.max_seq_len_q,
                 " must equal the dense Sq=", q.sizes[1]);
    RECOPS_CHECK(a.max_seq_len_k == k.sizes[1], op, ": max_seq_len_k=", a.max_seq_len_k,
                 " must equal the dense Sk=", k.sizes[1]);
    RECOPS_CHECK(q.sizes[1] <= k.sizes[1], op, ": dense Sq=", q.sizes[1], " > Sk=", k.sizes[1],
                 " (delta-q needs Lq <= Lk)");
  }
  p->dtype = q.dtype;
  p->jagged = jagged;
  p->B = B;
  p->Hq = Hq;
  p->Hk = Hk;
  p->d = d;
  p->dv = dv;
  p->Sq = a.max_seq_len_q;
  p->Sk = a.max_seq_len_k;
  // Dense rows B·S: an empty q/k may carry extents whose product overflows.
  int64_t dense_q = 0, dense_k = 0;
  if (!jagged)
    RECOPS_CHECK(!__builtin_mul_overflow(B, q.sizes[1], &dense_q) &&
                     !__builtin_mul_overflow(B, k.sizes[1], &dense_k),
                 op, ": dense B·Sq and B·Sk must fit int64; got B=", B, ", Sq=", q.sizes[1],
                 ", Sk=", k.sizes[1]);
  p->total_q = jagged ? q.sizes[0] : dense_q;
  p->total_k = jagged ? k.sizes[0] : dense_k;
  p->device_index = q.device.index;

  RECOPS_CHECK(a.target_group_size >= 0, op, ": target_group_size=", a.target_group_size,
               " must be >= 0 (0: no target mask, targets are causal like history)");
  RECOPS_CHECK(a.window_left >= -1 && a.window_right >= -1, op, ": window (", a.window_left, ", ",
               a.window_right, ") entries must be >= -1 (-1 is unbounded)");
  if (a.num_contexts) RECOPS_RETURN_IF_ERROR(check_per_seq(op, "num_contexts", *a.num_contexts, B));
  if (a.num_targets) RECOPS_RETURN_IF_ERROR(check_per_seq(op, "num_targets", *a.num_targets, B));

  const bool window_default = a.window_left == -1 && a.window_right == 0;
  switch (a.mask_type) {
    case HstuMaskType::causal:
      p->window_left = a.window_left;
      p->window_right = a.window_right;
      break;
    case HstuMaskType::anti_causal:
    case HstuMaskType::none:
      RECOPS_CHECK(window_default, op,
                   ": mask_type anti_causal/none fixes the window; give either it or a window (",
                   a.window_left, ", ", a.window_right, "), not both");
      p->window_left = a.mask_type == HstuMaskType::none ? -1 : 0;
      p->window_right = -1;
      break;
    case HstuMaskType::custom:
      RECOPS_CHECK(a.mask.has_value(), op, ": mask_type custom needs the mask tensor");
      break;
    default:
      RECOPS_CHECK(false, op, ": mask_type=", static_cast<int>(a.mask_type),
                   " must be 0 (causal), 1 (anti_causal), 2 (none) or 3 (custom)");
  }
  RECOPS_CHECK(!a.mask || a.mask_type == HstuMaskType::custom, op,
               ": a mask tensor needs mask_type custom");
  RECOPS_CHECK(!(a.mask && a.func), op, ": give either mask or func, not both");
  // [B, Hq or 1, Sq, Sk] tensors: mask and rab.
  auto check_bhss = [&](const TensorView& t, const char* name) -> Status {
    RECOPS_CHECK(t.ndim == 4 && t.sizes[0] == B && (t.sizes[1] == Hq || t.sizes[1] == 1) &&
                     t.sizes[2] == a.max_seq_len_q && t.sizes[3] == a.max_seq_len_k,
                 op, ": ", name, " must be [B, Hq or 1, max_seq_len_q, max_seq_len_k] = [", B, ", ",
                 Hq, " or 1, ", a.max_seq_len_q, ", ", a.max_seq_len_k, "], got ", describe(t));
    return core::check_same_device(op, "q", q, name, t);
  };
  if (a.mask) {
    const TensorView& m = *a.mask;
    RECOPS_RETURN_IF_ERROR(check_bhss(m, "mask"));
    RECOPS_CHECK(m.dtype == DType::boolean || m.dtype == q.dtype, op,
                 ": mask must be bool or q's dtype ", dtype_name(q.dtype), ", got ",
                 dtype_name(m.dtype));
    p->mask = m.data;
    p->mask_dtype = m.dtype;
    for (int i = 0; i < 4; ++i) p->mask_s[i] = m.strides[i];
    if (m.sizes[1] == 1) p->mask_s[1] = 0;
  }
  if (a.rab) {
    const TensorView& r = *a.rab;
    RECOPS_RETURN_IF_ERROR(check_bhss(r, "rab"));
    RECOPS_CHECK(r.dtype == q.dtype, op, ": rab must have q's dtype ", dtype_name(q.dtype),
                 ", got ", dtype_name(r.dtype));
    p->rab = r.data;
    p->rab_heads = r.sizes[1];
    for (int i = 0; i < 4; ++i) p->rab_s[i] = r.strides[i];
    if (r.sizes[1] == 1) p->rab_s[1] = 0;
  }
  const int64_t total_q = jagged ? q.sizes[0] : B * q.sizes[1];
  if (a.func) {
    const TensorView& f = *a.func;
    RECOPS_CHECK(f.ndim == 3 && (f.sizes[0] == Hq || f.sizes[0] == 1) && f.sizes[2] == total_q, op,
                 ": func must be [Hq or 1, nfunc, total_q] = [", Hq, " or 1, nfunc, ", total_q,
                 "], got ", describe(f));
    RECOPS_CHECK(f.dtype == DType::int32, op, ": func must be int32, got ", dtype_name(f.dtype));
    RECOPS_CHECK(f.sizes[1] % 2 == 1, op, ": func has nfunc=", f.sizes[1],
                 "; nfunc must be odd ([0,F0) then [F1,F2) pairs)");
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", q, "func", f));
    p->func = static_cast<const int32_t*>(f.data);
    p->nfunc = f.sizes[1];
    for (int i = 0; i < 3; ++i) p->func_s[i] = f.strides[i];
    if (f.sizes[0] == 1) p->func_s[0] = 0;
  }
  p->alpha = a.alpha.value_or(d > 0 ? 1.0 / std::sqrt(static_cast<double>(d)) : 1.0);
  RECOPS_CHECK(std::isfinite(p->alpha), op, ": alpha must be finite, got ", p->alpha);
  p->silu_scale = a.silu_scale.value_or(a.max_seq_len_q > 0 ? 1.0 / a.max_seq_len_q : 1.0);
  RECOPS_CHECK(std::isfinite(p->silu_scale), op, ": silu_scale must be finite, got ",
               p->silu_scale);
  if (a.attn_scale) {
    const TensorView& s = *a.attn_scale;
    RECOPS_CHECK(s.ndim == 1 && s.sizes[0] == total_q && s.dtype == DType::fp32, op,
                 ": attn_scale must be fp32 [total_q] = [", total_q, "], got ", describe(s));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", q, "attn_scale", s));
    p->attn_scale = static_cast<const float*>(s.data);
    p->attn_scale_stride = s.strides[0];
  }
  const int npaged = a.kv_cache.has_value() + a.page_offsets.has_value() + a.page_ids.has_value() +
                     a.last_page_len.has_value();
  RECOPS_CHECK(npaged == 0 || npaged == 4, op,
               ": paged KV needs all of kv_cache, page_offsets, page_ids and last_page_len");
  if (npaged == 4) {
    const TensorView& kv = *a.kv_cache;
    RECOPS_CHECK(jagged, op,
                 ": paged KV needs the jagged layout (seq_offsets_k counts new tokens)");
    RECOPS_CHECK(dv == d, op,
                 ": paged KV needs dv == d (the cache holds K and V of width d), got d=", d,
                 " dv=", dv);
    const int64_t ps = kv.ndim == 5 ? kv.sizes[2] : 0;
    RECOPS_CHECK(kv.ndim == 5 && kv.sizes[1] == 2 && kv.sizes[3] == Hk && kv.sizes[4] == d, op,
                 ": kv_cache must be [num_pages, 2, page_size, Hk, d] = [num_pages, 2, page_size, ",
                 Hk, ", ", d, "], got ", describe(kv));
    RECOPS_CHECK(ps == 16 || ps == 32 || ps == 64 || ps == 128 || ps == 256, op, ": page_size=", ps,
                 " must be one of 16, 32, 64, 128, 256");
    RECOPS_CHECK(kv.dtype == q.dtype, op, ": kv_cache must have q's dtype");
    RECOPS_CHECK(kv.strides[4] == 1 || d <= 1 || kv.numel() == 0, op,
                 ": kv_cache's last dim must be contiguous");
    RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "page_offsets", *a.page_offsets));
    RECOPS_CHECK(a.page_offsets->sizes[0] == B + 1, op, ": page_offsets must be [B+1] = [", B + 1,
                 "], got ", describe(*a.page_offsets));
    const TensorView& ids = *a.page_ids;
    RECOPS_CHECK(ids.ndim == 1 && (ids.dtype == DType::int32 || ids.dtype == DType::int64), op,
                 ": page_ids must be 1-D int32/int64, got ", describe(ids));
    RECOPS_RETURN_IF_ERROR(check_per_seq(op, "last_page_len", *a.last_page_len, B));
    for (const auto& [t, name] : {std::pair{&kv, "kv_cache"},
                                  {&*a.page_offsets, "page_offsets"},
                                  {&ids, "page_ids"},
                                  {&*a.last_page_len, "last_page_len"}})
      RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", q, name, *t));
    p->kv_cache = kv.data;
    p->num_pages = kv.sizes[0];
    p->num_page_ids = ids.sizes[0];
    p->page_size = ps;
    for (int i = 0; i < 5; ++i) p->kv_s[i] = kv.strides[i];
    p->page_offsets = a.page_offsets->data;
    p->page_offsets_int64 = a.page_offsets->dtype == DType::int64;
    p->page_offsets_stride = a.page_offsets->strides[0];
    p->page_ids = ids.data;
    p->page_ids_int64 = ids.dtype == DType::int64;
    p->page_ids_stride = ids.strides[0];
    p->last_page_len = a.last_page_len->data;
    p->last_page_len_int64 = a.last_page_len->dtype == DType::int64;
    p->last_page_len_stride = a.last_page_len->strides[0];
  }
  // Tensor addressing (spec layout -> flat strides).
  auto fill = [&](const TensorView& t, int64_t* bs, int64_t* rs, int64_t* hs) {
    *bs = jagged ? 0 : t.strides[0];
    *rs = t.strides[rank - 3];
    *hs = t.strides[rank - 2];
  };
  fill(q, &p->q_batch, &p->q_row, &p->q_head);
  fill(k, &p->k_batch, &p->k_row, &p->k_head);
  fill(v, &p->v_batch, &p->v_row, &p->v_head);
  p->q = q.data;
  p->k = k.data;
  p->v = v.data;
  if (jagged) {
    p->offsets_q = a.seq_offsets_q->data;
    p->offsets_k = a.seq_offsets_k->data;
    p->offsets_q_int64 = a.seq_offsets_q->dtype == DType::int64;
    p->offsets_k_int64 = a.seq_offsets_k->dtype == DType::int64;
    p->offsets_q_stride = a.seq_offsets_q->strides[0];
    p->offsets_k_stride = a.seq_offsets_k->strides[0];
  }
  if (a.num_contexts) {
    p->num_contexts = a.num_contexts->data;
    p->contexts_int64 = a.num_contexts->dtype == DType::int64;
    p->contexts_stride = a.num_contexts->strides[0];
  }
  if (a.num_targets) {
    p->num_targets = a.num_targets->data;
    p->targets_int64 = a.num_targets->dtype == DType::int64;
    p->targets_stride = a.num_targets->strides[0];
  }
  p->group_size = a.target_group_size;
  // Spec §3 rule 4 compares c with r ± bound, where |c - r| < every length Lq, Lk. A bound at
  // least as long as any sequence can hold (a tensor's tokens, cached pages included) never masks
  // and is handed on as -1 (unbounded), so that no implementation computes r ± a huge bound.
  const int64_t longest =
      std::max({p->Sq, p->Sk, p->total_q, p->total_k + p->num_page_ids * p->page_size});
  if (p->window_left >= longest) p->window_left = -1;
  if (p->window_right >= longest) p->window_right = -1;
  // target_group_size 0 (the seed's "no target mask"): one group longer than any sequence, so
  // rule 5 never masks and the targets follow the window like history.
  if (p->group_size == 0) p->group_size = std::max<int64_t>(longest, 1);
  return Status::Ok();
}

// Small 1-D index tensor on the device -> dense host copy (elements at their own size, so the
// P::load rules read it with stride 1).
Status pull_index(const TensorView& t, std::vector<int64_t>* buf, const void** ptr, int64_t* stride,
                  const Context& ctx) {
  const int64_t n = t.sizes[0];
  buf->assign(static_cast<size_t>(n > 0 ? n : 1), 0);
  if (n > 0)
    RECOPS_RETURN_IF_ERROR(core::cuda::copy_strided_to_host(
        buf->data(), t.data, dtype_size(t.dtype), n, t.strides[0], t.device.index, ctx.stream));
  *ptr = buf->data();
  *stride = 1;
  return Status::Ok();
}

// Rules that read tensor contents: offsets, lengths, contexts/targets, pages. CPU tensors are
// always checked; CUDA tensors when validation is on (recops::validate_enabled) and the stream is
// not capturing a graph: the small index tensors are copied to the host (one sync per call). The
// CUDA kernels clamp whatever they read, so unvalidated bad data stays within the tensors.
Status check_data(const char* op, const HstuAttnArgs& a, const P& p_in, const Context& ctx) {
  P p = p_in;  // for CUDA tensors: the index pointers redirected to host copies
  std::vector<int64_t> bufs[7];
  if (!a.q.device.is_cpu()) {
    if (!validate_enabled() || core::cuda::stream_capturing(ctx.stream)) return Status::Ok();
    if (p.jagged) {
      RECOPS_RETURN_IF_ERROR(
          pull_index(*a.seq_offsets_q, &bufs[0], &p.offsets_q, &p.offsets_q_stride, ctx));
      RECOPS_RETURN_IF_ERROR(
          pull_index(*a.seq_offsets_k, &bufs[1], &p.offsets_k, &p.offsets_k_stride, ctx));
    }
    if (a.num_contexts)
      RECOPS_RETURN_IF_ERROR(
          pull_index(*a.num_contexts, &bufs[2], &p.num_contexts, &p.contexts_stride, ctx));
    if (a.num_targets)
      RECOPS_RETURN_IF_ERROR(
          pull_index(*a.num_targets, &bufs[3], &p.num_targets, &p.targets_stride, ctx));
    if (p.kv_cache) {
      RECOPS_RETURN_IF_ERROR(
          pull_index(*a.page_offsets, &bufs[4], &p.page_offsets, &p.page_offsets_stride, ctx));
      RECOPS_RETURN_IF_ERROR(
          pull_index(*a.page_ids, &bufs[5], &p.page_ids, &p.page_ids_stride, ctx));
      RECOPS_RETURN_IF_ERROR(
          pull_index(*a.last_page_len, &bufs[6], &p.last_page_len, &p.last_page_len_stride, ctx));
    }
  }
  if (p.jagged) {
    RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, "seq_offsets_q", *a.seq_offsets_q,
                                                  a.q.sizes[0], "q.size(0) (total_q)", ctx));
    RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, "seq_offsets_k", *a.seq_offsets_k,
                                                  a.k.sizes[0], "k.size(0) (total_k)", ctx));
  }
  if (p.kv_cache) {
    RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, "page_offsets", *a.page_offsets,
                                                  a.page_ids->sizes[0], "page_ids.size(0)", ctx));
    const int64_t num_pages = a.kv_cache->sizes[0];
    for (int64_t j = 0; j < a.page_ids->sizes[0]; ++j) {
      const int64_t id = P::load(p.page_ids, p.page_ids_int64, p.page_ids_stride, j);
      RECOPS_CHECK(id >= 0 && id < num_pages, op, ": page_ids[", j, "]=", id,
                   " is out of range [0, num_pages=", num_pages, ")");
    }
    for (int64_t b = 0; b < p.B; ++b) {
      const int64_t np =
          P::load(p.page_offsets, p.page_offsets_int64, p.page_offsets_stride, b + 1) -
          P::load(p.page_offsets, p.page_offsets_int64, p.page_offsets_stride, b);
      const int64_t last =
          P::load(p.last_page_len, p.last_page_len_int64, p.last_page_len_stride, b);
      RECOPS_CHECK(np == 0 ? last == 0 : (last >= 1 && last <= p.page_size), op, ": last_page_len[",
                   b, "]=", last, " must be in [1, page_size=", p.page_size,
                   "] for a sequence with pages, 0 without");
    }
  }
  // Dense without per-sequence tensors, every sequence has the same lengths: check one (an empty
  // dense q may have B up to 2^63-1). Otherwise B is bounded by a tensor's size.
  const bool per_seq = p.jagged || p.kv_cache || a.num_contexts || a.num_targets;
  const int64_t checked = per_seq ? p.B : std::min<int64_t>(p.B, 1);
  for (int64_t b = 0; b < checked; ++b) {
    const int64_t Lq = p.len_q(b), Lk = p.len_k(b);
    RECOPS_CHECK(Lq <= p.Sq, op, ": sequence ", b, " has Lq=", Lq, " > max_seq_len_q=", p.Sq);
    RECOPS_CHECK(Lk <= p.Sk, op, ": sequence ", b, " has Lk=", Lk,
                 " (cached + new keys) > max_seq_len_k=", p.Sk);
    RECOPS_CHECK(Lq <= Lk, op, ": sequence ", b, " has Lq=", Lq, " > Lk=", Lk,
                 " (delta-q aligns the last query with the last key; needs Lq <= Lk)");
    const int64_t C = p.contexts(b), T = p.targets(b);
    RECOPS_CHECK(C >= 0 && C <= Lk, op, ": num_contexts[", b, "]=", C, " must be in [0, Lk=", Lk,
                 "] (non-negative, at most the sequence)");
    RECOPS_CHECK(T >= 0 && T <= Lk, op, ": num_targets[", b, "]=", T, " must be in [0, Lk=", Lk,
                 "] (non-negative, at most the sequence)");
  }
  return Status::Ok();
}

Status check_out(const char* op, const char* name, const TensorView& t, const Shape& expect,
                 const HstuAttnArgs& a) {
  RECOPS_CHECK(t.shape() == expect, op, ": ", name, " has shape ", shape_str(t.shape()),
               ", expected ", shape_str(expect));
  RECOPS_CHECK(t.dtype == a.q.dtype, op, ": ", name, " must have q's dtype ", dtype_name(a.q.dtype),
               ", got ", dtype_name(t.dtype));
  RECOPS_CHECK(t.numel() == 0 || t.sizes[t.ndim - 1] <= 1 || t.strides[t.ndim - 1] == 1, op, ": ",
               name, "'s last dim must be contiguous");
  // Elements that share memory would overwrite each other (e.g. batches with batch stride 0).
  if (t.numel() > 0)
    for (int i = 0; i < t.ndim; ++i)
      RECOPS_CHECK(t.sizes[i] <= 1 || t.strides[i] != 0, op, ": ", name, " has stride 0 on dim ", i,
                   " of size ", t.sizes[i], " (", describe(t),
                   "); an output's elements must not alias");
  return core::check_same_device(op, "q", a.q, name, t);
}

void fill_rows(const P& p, const TensorView& t, int64_t* bs, int64_t* rs, int64_t* hs) {
  const int rank = p.jagged ? 3 : 4;
  *bs = p.jagged ? 0 : t.strides[0];
  *rs = t.strides[rank - 3];
  *hs = t.strides[rank - 2];
}

// The shapes of the outputs, from a p that check_meta filled.
Shape fwd_out_shape(const HstuAttnArgs& a, const P& p) {
  Shape s = a.q.shape();
  s.back() = p.dv;
  return s;
}

// After check_meta: the data checks and the output's strides (the binding's path, whose output
// the shape function sized, starts here; the public entry checks `out` first).
Status finish_fwd(const HstuAttnArgs& a, const TensorView& out, const Context& ctx, P* p) {
  RECOPS_RETURN_IF_ERROR(check_data(kFwd, a, *p, ctx));
  p->out = out.data;
  fill_rows(*p, out, &p->o_batch, &p->o_row, &p->o_head);
  return Status::Ok();
}

Status run_fwd(const HstuAttnArgs& a, const TensorView& out, const Context& ctx, P* p) {
  RECOPS_RETURN_IF_ERROR(finish_fwd(a, out, ctx, p));
  if (out.numel() == 0) return Status::Ok();  // nothing to compute: no launch
  return core::dispatch(kFwd, fwd_impls(), a.q.device.type, *p, ctx);
}

Status prepare_fwd(const HstuAttnArgs& a, const TensorView& out, const Context& ctx, P* p) {
  RECOPS_RETURN_IF_ERROR(check_meta(kFwd, a, p));
  RECOPS_RETURN_IF_ERROR(check_out(kFwd, "out", out, fwd_out_shape(a, *p), a));
  return finish_fwd(a, out, ctx, p);
}

Status bwd_meta(const HstuAttnArgs& a, P* p) {
  RECOPS_RETURN_IF_ERROR(check_meta(kBwd, a, p));
  RECOPS_CHECK(!a.kv_cache, kBwd,
               ": paged KV is inference only (no gradient is defined for the cache)");
  return Status::Ok();
}

// Writes zeros into `t`: the gradients of k, v (and rab) when q has no heads (Hq = 0), a sum over
// no query heads. CPU: any strides; CUDA: one memset, so the elements must be dense.
Status zero_fill(const char* name, const TensorView& t, const Context& ctx) {
  const int64_t n = t.numel();
  if (n == 0) return Status::Ok();
  const int64_t es = dtype_size(t.dtype);
  if (!t.device.is_cpu()) {
    RECOPS_CHECK(t.is_contiguous(), kBwd, ": ", name,
                 " must be contiguous when q has no heads (it is zero-filled at once), got ",
                 describe(t));
    return core::cuda::zero_async(t.data, static_cast<size_t>(n * es), t.device.index, ctx.stream);
  }
  std::vector<int64_t> idx(static_cast<size_t>(t.ndim), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int i = 0; i < t.ndim; ++i) off += idx[i] * t.strides[i];
    std::memset(static_cast<char*>(t.data) + off * es, 0, static_cast<size_t>(es));
    for (int i = t.ndim - 1; i >= 0 && ++idx[i] == t.sizes[i]; --i) idx[i] = 0;
  }
  return Status::Ok();
}

// After bwd_meta and the output checks: dout, the data checks, the strides.
Status finish_bwd(const TensorView& dout, const HstuAttnArgs& a, const TensorView& dq,
                  const TensorView& dk, const TensorView& dv, const TensorView* drab,
                  const Context& ctx, P* p) {
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dout", dout, fwd_out_shape(a, *p), a));
  if (drab) {
    RECOPS_CHECK(a.rab.has_value(), kBwd, ": drab was asked for but no rab was given");
    p->drab = drab->data;
    for (int i = 0; i < 4; ++i) p->drab_s[i] = drab->strides[i];
  }
  RECOPS_RETURN_IF_ERROR(check_data(kBwd, a, *p, ctx));
  p->dout = dout.data;
  p->dq = dq.data;
  p->dk = dk.data;
  p->dv_out = dv.data;
  fill_rows(*p, dout, &p->do_batch, &p->do_row, &p->do_head);
  fill_rows(*p, dq, &p->dq_batch, &p->dq_row, &p->dq_head);
  fill_rows(*p, dk, &p->dk_batch, &p->dk_row, &p->dk_head);
  fill_rows(*p, dv, &p->dv_batch, &p->dv_row, &p->dv_head);
  return Status::Ok();
}

Status run_bwd(const TensorView& dout, const HstuAttnArgs& a, const TensorView& dq,
               const TensorView& dk, const TensorView& dv, const TensorView* drab,
               const Context& ctx, P* p) {
  RECOPS_RETURN_IF_ERROR(finish_bwd(dout, a, dq, dk, dv, drab, ctx, p));
  if (dq.numel() + dk.numel() + dv.numel() + (drab ? drab->numel() : 0) == 0) return Status::Ok();
  if (p->Hq == 0) {  // no query heads: every gradient is an empty sum (no implementation runs)
    RECOPS_RETURN_IF_ERROR(zero_fill("dk", dk, ctx));
    RECOPS_RETURN_IF_ERROR(zero_fill("dv", dv, ctx));
    return drab ? zero_fill("drab", *drab, ctx) : Status::Ok();
  }
  return core::dispatch(kBwd, bwd_impls(), a.q.device.type, *p, ctx);
}

Status prepare_bwd(const TensorView& dout, const HstuAttnArgs& a, const TensorView& dq,
                   const TensorView& dk, const TensorView& dv, const TensorView* drab,
                   const Context& ctx, P* p) {
  RECOPS_RETURN_IF_ERROR(bwd_meta(a, p));
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dq", dq, a.q.shape(), a));
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dk", dk, a.k.shape(), a));
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dv", dv, a.v.shape(), a));
  if (drab && a.rab) RECOPS_RETURN_IF_ERROR(check_out(kBwd, "drab", *drab, a.rab->shape(), a));
  return finish_bwd(dout, a, dq, dk, dv, drab, ctx, p);
}

}  // namespace

OpInfo hstu_attn_fwd_info() {
  return {kFwd, "hstu", core::describe_impls(fwd_impls())};
}
OpInfo hstu_attn_bwd_info() {
  return {kBwd, "hstu", core::describe_impls(bwd_impls())};
}

}  // namespace recops::ops

namespace recops {

Status hstu_attn_fwd_shape(const HstuAttnArgs& a, Shape* out_shape) {
  ops::HstuAttnParams p;
  RECOPS_RETURN_IF_ERROR(ops::check_meta(ops::kFwd, a, &p));
  *out_shape = ops::fwd_out_shape(a, p);
  return Status::Ok();
}

Status hstu_attn_bwd_shape(const HstuAttnArgs& a, Shape* dq_shape, Shape* dk_shape, Shape* dv_shape,
                           Shape* drab_shape) {
  ops::HstuAttnParams p;
  RECOPS_RETURN_IF_ERROR(ops::bwd_meta(a, &p));
  *dq_shape = a.q.shape();
  *dk_shape = a.k.shape();
  *dv_shape = a.v.shape();
  if (drab_shape) *drab_shape = a.rab ? a.rab->shape() : Shape{};
  return Status::Ok();
}

Status hstu_attn_fwd(const HstuAttnArgs& a, const TensorView& out, const Context& ctx) {
  ops::HstuAttnParams p;
  RECOPS_RETURN_IF_ERROR(ops::check_meta(ops::kFwd, a, &p));
  RECOPS_RETURN_IF_ERROR(ops::check_out(ops::kFwd, "out", out, ops::fwd_out_shape(a, p), a));
  return ops::run_fwd(a, out, ctx, &p);
}

Status hstu_attn_bwd(const TensorView& dout, const HstuAttnArgs& a, const TensorView& dq,
                     const TensorView& dk, const TensorView& dv, const TensorView* drab,
                     const Context& ctx) {
  ops::HstuAttnParams p;
  RECOPS_RETURN_IF_ERROR(ops::bwd_meta(a, &p));
  RECOPS_RETURN_IF_ERROR(ops::check_out(ops::kBwd, "dq", dq, a.q.shape(), a));
  RECOPS_RETURN_IF_ERROR(ops::check_out(ops::kBwd, "dk", dk, a.k.shape(), a));
  RECOPS_RETURN_IF_ERROR(ops::check_out(ops::kBwd, "dv", dv, a.v.shape(), a));
  if (drab && a.rab)
    RECOPS_RETURN_IF_ERROR(ops::check_out(ops::kBwd, "drab", *drab, a.rab->shape(), a));
  return ops::run_bwd(dout, a, dq, dk, dv, drab, ctx, &p);
}

Status hstu_attn_mask(const HstuAttnArgs& a, int64_t seq, int64_t head, const TensorView& out) {
  constexpr const char* kMask = "hstu_attn_mask";
  ops::HstuAttnParams p;
  RECOPS_RETURN_IF_ERROR(ops::check_meta(kMask, a, &p));
  RECOPS_CHECK(a.q.device.is_cpu(), kMask, ": runs on CPU tensors only");
  RECOPS_RETURN_IF_ERROR(ops::check_data(kMask, a, p, {}));
  RECOPS_CHECK(seq >= 0 && seq < p.B, kMask, ": seq=", seq, " is not in [0, B=", p.B, ")");
  RECOPS_CHECK(head >= 0 && head < p.Hq, kMask, ": head=", head, " is not in [0, Hq=", p.Hq, ")");
  RECOPS_CHECK(out.ndim == 2 && out.sizes[0] == p.Sq && out.sizes[1] == p.Sk &&
                   out.dtype == DType::boolean && out.device.is_cpu(),
               kMask, ": out must be bool [max_seq_len_q, max_seq_len_k] = [", p.Sq, ", ", p.Sk,
               "] on the CPU, got ", describe(out));
  ops::hstu_attn_mask_reference(p, seq, head, static_cast<uint8_t*>(out.data), out.strides[0],
                                out.strides[1]);
  return Status::Ok();
}

Status hstu_attn_fwd_plain(const HstuAttnArgs& a, const TensorView& out) {
  ops::HstuAttnParams p;
  RECOPS_RETURN_IF_ERROR(ops::prepare_fwd(a, out, {}, &p));
  RECOPS_CHECK(a.q.device.is_cpu(), ops::kFwd, ": the plain baseline runs on CPU tensors only");
  if (out.numel() == 0) return Status::Ok();
  p.plain = true;
  return ops::hstu_attn_fwd_reference(p, {});
}

Status hstu_attn_bwd_plain(const TensorView& dout, const HstuAttnArgs& a, const TensorView& dq,
                           const TensorView& dk, const TensorView& dv, const TensorView* drab) {
  ops::HstuAttnParams p;
  RECOPS_RETURN_IF_ERROR(ops::prepare_bwd(dout, a, dq, dk, dv, drab, {}, &p));
  RECOPS_CHECK(a.q.device.is_cpu(), ops::kBwd, ": the plain baseline runs on CPU tensors only");
  if (dq.numel() + dk.numel() + dv.numel() + (drab ? drab->numel() : 0) == 0) return Status::Ok();
  if (p.Hq == 0) return ops::run_bwd(dout, a, dq, dk, dv, drab, {}, &p);  // the zeros
  p.plain = true;
  return ops::hstu_attn_bwd_reference(p, {});
}

}  // namespace recops

// ---- the argument tables (core/kit/op_def.h) ----
// hstu_attn_fwd, hstu_attn_bwd and hstu_mask share HstuAttnArgs (recops/hstu.h), whose members the
// table below names once for the three. The plan is the params check_meta filled in the shape
// function, so the run does the data checks and the dispatch only.
namespace recops::ops {
namespace {
struct HstuBwdArgs : HstuAttnArgs {
  TensorView dout;  // like out
  bool want_drab = false;
};
struct HstuMaskArgs : HstuAttnArgs {
  int64_t seq = 0, head = 0;
};

// recops.hstu_attn, the forward's wrapper (python/recops/_kit.py writes it from the table).
constexpr const char* kAttnDoc = R"(HSTU attention: per sequence and query head,
``O = s · (M ⊙ SiLU(α (Q Kᵀ + rab))) V`` with the mask ``M`` of spec §3.

Args:
    q: jagged ``[total_q, Hq, d]`` (with ``seq_offsets_q``) or dense ``[B, Sq, Hq, d]``;
        fp32, fp16, bf16 (fp64 runs the reference, for gradcheck).
    k: ``[total_k, Hk, d]`` or ``[B, Sk, Hk, d]``, q's dtype. ``v``: same with ``dv`` last.
    seq_offsets_q, seq_offsets_k: ``[B+1]`` int32/int64 (jagged layout); ``seq_offsets_k``
        defaults to ``seq_offsets_q``. Both None: dense layout.
    max_seq_len_q, max_seq_len_k: bounds of the lengths (the padded extents of ``rab`` and
        ``mask``); default: the dense S, or the longest sequence read from the offsets (a
        data-dependent read; under ``torch.compile`` an unbacked SymInt, which the schema
        takes; giving them saves the read). With a paged cache
        ``max_seq_len_k`` counts cached + new keys and must be given.
    num_contexts, num_targets: ``[B]`` int32/int64 per-sequence counts in ``[0, Lk]``.
    target_group_size: ``>= 1``: a target sees history and its own group causally; ``0``: no
        target mask (the seed's rule: targets follow the window like history).
    window: ``(left, right)``, -1 unbounded; ``(-1, 0)`` is causal, ``(w, 0)`` a sliding window.
    mask_type: ``"causal"`` (uses ``window``), ``"anti_causal"``, ``"none"`` or ``"custom"``
        (needs ``mask``).
    mask: ``[B, Hq or 1, Sq, Sk]`` bool or q's dtype, nonzero keeps (``mask_type="custom"``).
    func: ``[Hq or 1, nfunc, total_q]`` int32, ``nfunc`` odd: query keeps keys in
        ``[0, F0) ∪ [F1, F2) ∪ …`` (replaces the built-in mask).
    rab: ``[B, Hq or 1, Sq, Sk]`` relative attention bias in q's dtype. ``alpha`` multiplies
        it too (NVIDIA convention): to get ``SiLU(α QKᵀ + rab)`` pass ``rab / alpha``.
    alpha: score scale, default ``1/sqrt(d)``.
    silu_scale: output normaliser ``s``, default ``1/max_seq_len_q``.
    attn_scale: ``[total_q]`` fp32 per-token normaliser (replaces ``silu_scale``).
    kv_cache, page_offsets, page_ids, last_page_len: paged K/V history (inference only):
        ``[num_pages, 2, page_size, Hk, d]``, ``[B+1]``, ``[page_offsets[-1]]``, ``[B]``.

Returns:
    like ``q`` with ``dv`` in the last dim.

Differentiable in ``q``, ``k``, ``v`` and ``rab`` (the backward is deterministic); a paged
cache has no gradient. Double backward raises.

Raises:
    RuntimeError naming the argument and the rule for every bad input of spec §5.)";

// recops.hstu_mask, the wrapper of hstu_seq_mask (below).
constexpr const char* kMaskDoc =
    R"(The dense boolean mask ``M`` of one sequence (spec §3), ``[seq_len, seq_len_k]``:
``M[i, c]`` is True where query ``i`` attends to key ``c``. Evaluated by the op's reference,
so it is exactly what ``hstu_attn`` uses for this configuration.

Args:
    seq_len: ``Lq``; ``seq_len_k``: ``Lk`` (default ``Lq``; larger means delta-q: the last
        query aligns with the last key).
    num_contexts, num_targets, target_group_size, window, mask_type: as in ``hstu_attn``
        (``mask_type`` ``"causal"``, ``"anti_causal"`` or ``"none"``).

Example (spec §3's worked example)::

    >>> recops.hstu_mask(9, num_contexts=2, num_targets=4, target_group_size=2).int())";

// The mask types' names in the Python wrappers, in HstuMaskType's order.
constexpr const char* kMaskNames = "causal anti_causal none custom";

template <class A>
kit::Def<A, P> hstu_table(const char* name, bool fwd) {
  kit::Def<A, P> d(name, "hstu");
  if constexpr (std::is_same_v<A, HstuBwdArgs>)
    d.template arg<&HstuBwdArgs::dout>("dout", {.dense_from = -2});  // last dim dense
  // Gradients flow to q, k, v and rab (the forward only; the backward is not differentiable).
  // The .py faces shape recops.hstu_attn (the forward's wrapper; the other two have none): the
  // offsets and lengths may be left out (the lengths are then read from the offsets: a
  // data-dependent read), window is one tuple, mask_type a name; alpha's default 1/sqrt(d) and
  // silu_scale's 1/max_seq_len_q are the entry's (check_meta).
  d.template arg<&HstuAttnArgs::q>("q", {.grad = fwd})
      .template arg<&HstuAttnArgs::k>("k", {.grad = fwd})
      .template arg<&HstuAttnArgs::v>("v", {.grad = fwd})
      .template arg<&HstuAttnArgs::seq_offsets_q>("seq_offsets_q", {.py = {.def = "None"}})
      .template arg<&HstuAttnArgs::seq_offsets_k>(
          "seq_offsets_k", {.py = {.def = "None", .rule = "same seq_offsets_q"}})
      .template arg<&HstuAttnArgs::max_seq_len_q>(
          "max_seq_len_q",
          {.sym = true, .py = {.def = "None", .rule = "longest seq_offsets_q q 1"}})
      .template arg<&HstuAttnArgs::max_seq_len_k>(
          "max_seq_len_k",
          {.sym = true,
           .py = {.def = "None",
                  .rule = "longest seq_offsets_k k 1",
                  .needed_with = "kv_cache",
                  .why = "with a paged cache give max_seq_len_k (cached + new keys)"}})
      .template arg<&HstuAttnArgs::num_contexts>("num_contexts",
                                                 {.def = "None", .py = {.kw = true}})
      .template arg<&HstuAttnArgs::num_targets>("num_targets", {.def = "None"})
      .template arg<&HstuAttnArgs::target_group_size>("target_group_size", {.def = "1"})
      .template arg<&HstuAttnArgs::window_left>("window_left",
                                                {.def = "-1", .py = {.pair = "window"}})
      .template arg<&HstuAttnArgs::window_right>("window_right", {.def = "0"})
      .template arg<&HstuAttnArgs::mask_type>("mask_type",
                                              {.def = "0", .py = {.names = kMaskNames}})
      .template arg<&HstuAttnArgs::mask>("mask", {.def = "None"})
      .template arg<&HstuAttnArgs::func>("func", {.def = "None"})
      .template arg<&HstuAttnArgs::rab>("rab", {.def = "None", .grad = fwd})
      .template arg<&HstuAttnArgs::alpha>("alpha", {.def = "None"})
      .template arg<&HstuAttnArgs::silu_scale>("silu_scale", {.def = "None"})
      .template arg<&HstuAttnArgs::attn_scale>("attn_scale", {.def = "None"})
      .template arg<&HstuAttnArgs::kv_cache>("kv_cache", {.def = "None"})
      .template arg<&HstuAttnArgs::page_offsets>("page_offsets", {.def = "None"})
      .template arg<&HstuAttnArgs::page_ids>("page_ids", {.def = "None"})
      .template arg<&HstuAttnArgs::last_page_len>("last_page_len", {.def = "None"});
  if constexpr (std::is_same_v<A, HstuBwdArgs>)
    d.template arg<&HstuBwdArgs::want_drab>("want_drab", {.def = "False"});
  if constexpr (std::is_same_v<A, HstuMaskArgs>)
    d.template arg<&HstuMaskArgs::seq>("seq", {.def = "0"})
        .template arg<&HstuMaskArgs::head>("head", {.def = "0"});
  if (fwd)
    d.doc("hstu_attn", kAttnDoc);
  else
    d.doc("-", "");
  return d;
}

Status fwd_shapes(const HstuAttnArgs& a, P* p, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_meta(kFwd, a, p));
  outs->push_back({fwd_out_shape(a, *p), a.q.dtype});
  return Status::Ok();
}
Status fwd_run(const HstuAttnArgs& a, const P& plan, const kit::Outputs& o, const Context& ctx) {
  P p = plan;
  return run_fwd(a, o.views[0], ctx, &p);
}

Status bwd_shapes(const HstuBwdArgs& a, P* p, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(bwd_meta(a, p));
  const bool with_drab = a.want_drab && a.rab.has_value();
  outs->push_back({a.q.shape(), a.q.dtype});
  outs->push_back({a.k.shape(), a.q.dtype});
  outs->push_back({a.v.shape(), a.q.dtype});
  outs->push_back({with_drab ? a.rab->shape() : Shape{0}, a.q.dtype, with_drab});
  return Status::Ok();
}
Status bwd_run(const HstuBwdArgs& a, const P& plan, const kit::Outputs& o, const Context& ctx) {
  P p = plan;
  return run_bwd(a.dout, a, o.views[0], o.views[1], o.views[2], o.get(3), ctx, &p);
}

Status mask_shapes(const HstuMaskArgs& a, P* p, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_meta("hstu_mask", a, p));
  outs->push_back({{a.max_seq_len_q, a.max_seq_len_k}, DType::boolean});
  return Status::Ok();
}
Status mask_run(const HstuMaskArgs& a, const P&, const kit::Outputs& o, const Context&) {
  return hstu_attn_mask(a, a.seq, a.head, o.views[0]);
}

// hstu_seq_mask: the mask of one sequence from its lengths and counts (recops.hstu_mask). It runs
// hstu_mask's rules and reference on views of the few host values below.
struct HstuSeqMaskArgs {
  int64_t seq_len = 0;
  std::optional<int64_t> seq_len_k;  // default seq_len
  int64_t num_contexts = 0, num_targets = 0, target_group_size = 1;
  int64_t window_left = -1, window_right = 0;  // used with mask_type causal only
  HstuMaskType mask_type = HstuMaskType::causal;
};

struct OneSeq {
  int64_t off_q[2] = {0, 0}, off_k[2] = {0, 0}, contexts = 0, targets = 0;
  HstuMaskArgs a;
  explicit OneSeq(const HstuSeqMaskArgs& s) {
    const int64_t Lq = s.seq_len, Lk = s.seq_len_k.value_or(s.seq_len);
    off_q[1] = Lq;
    off_k[1] = Lk;
    contexts = s.num_contexts;
    targets = s.num_targets;
    const Device cpu = Device::cpu();
    auto ints = [&](int64_t* p, int64_t n) { return TensorView(p, DType::int64, cpu, {n}); };
    a.q = TensorView(nullptr, DType::fp32, cpu, {Lq, 1, 0});
    a.k = a.v = TensorView(nullptr, DType::fp32, cpu, {Lk, 1, 0});
    a.seq_offsets_q = ints(off_q, 2);
    a.seq_offsets_k = ints(off_k, 2);
    a.max_seq_len_q = Lq;
    a.max_seq_len_k = Lk;
    a.num_contexts = ints(&contexts, 1);
    a.num_targets = ints(&targets, 1);
    a.target_group_size = s.target_group_size;
    a.mask_type = s.mask_type;
    if (s.mask_type == HstuMaskType::causal) {  // the other types fix their window
      a.window_left = s.window_left;
      a.window_right = s.window_right;
    }
  }
  OneSeq(const OneSeq&) = delete;
  OneSeq& operator=(const OneSeq&) = delete;
};

Status check_lengths(const HstuSeqMaskArgs& s) {
  RECOPS_CHECK(s.seq_len >= 0, "hstu_mask: seq_len=", s.seq_len, " must be >= 0");
  RECOPS_CHECK(s.seq_len_k.value_or(0) >= 0, "hstu_mask: seq_len_k=", *s.seq_len_k,
               " must be >= 0");
  return Status::Ok();
}
Status seq_mask_shapes(const HstuSeqMaskArgs& s, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_lengths(s));
  const OneSeq one(s);
  std::vector<kit::OutSpec> o;
  P p;
  RECOPS_RETURN_IF_ERROR(mask_shapes(one.a, &p, &o));
  outs->push_back(o[0]);
  return Status::Ok();
}
Status seq_mask_run(const HstuSeqMaskArgs& s, const kit::Outputs& o, const Context&) {
  const OneSeq one(s);
  return hstu_attn_mask(one.a, 0, 0, o.views[0]);
}
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using namespace recops::ops;
  reg.add(hstu_attn_fwd_info());
  reg.add(hstu_attn_bwd_info());
  reg.add(hstu_table<recops::HstuAttnArgs>(kFwd, true)
              .out("out")
              .shapes(fwd_shapes)
              .run(fwd_run)
              .backward(kBwd));
  reg.add(hstu_table<HstuBwdArgs>(kBwd, false)
              .out("dq")
              .out("dk")
              .out("dv")
              .out("drab")
              .device_arg(1)  // q: the outputs follow q's device
              .shapes(bwd_shapes)
              .run(bwd_run));
  reg.add(hstu_table<HstuMaskArgs>("hstu_mask", false)
              .out("mask", false)
              .shapes(mask_shapes)
              .run(mask_run));
  using S = HstuSeqMaskArgs;
  reg.add(
      recops::kit::Def<S>("hstu_seq_mask", "hstu")
          .arg<&S::seq_len>("seq_len")
          .arg<&S::seq_len_k>("seq_len_k", {.def = "None"})
          .arg<&S::num_contexts>("num_contexts", {.def = "0", .kw = true})
          .arg<&S::num_targets>("num_targets", {.def = "0", .kw = true})
          .arg<&S::target_group_size>("target_group_size", {.def = "1", .kw = true})
          .arg<&S::window_left>("window_left", {.def = "-1", .kw = true, .py = {.pair = "window"}})
          .arg<&S::window_right>("window_right", {.def = "0", .kw = true})
          // custom needs a mask tensor: not a mask of this op
          .arg<&S::mask_type>("mask_type",
                              {.def = "0", .kw = true, .py = {.names = "causal anti_causal none"}})
          .out("mask", false)
          .shapes(seq_mask_shapes)
          .run(seq_mask_run)
          .doc("hstu_mask", kMaskDoc));
}
