// tests/fuzz/fuzz_attention_entries.cpp: HSTU (hstu_attn_fwd/bwd) and the Stem ops
// (stem_prepare, stem_indexer_metadata, stem_indexer, block_sparse_attention) through their
// public C++ entries on the CPU, with arguments derived from the fuzz input: extents, strides,
// offsets, lengths, flags and size scalars up to 2^62. Each call must return an error Status or
// run; a crash or a sanitizer report is a finding.
#include <algorithm>

#include "fuzz_util.h"

namespace {

using namespace recops_fuzz;
using recops::DType;

DType hstu_dtype(FuzzedDataProvider& fdp) {
  return dtype_or_any(fdp, pick(fdp, {DType::fp32, DType::fp16, DType::bf16, DType::fp64}));
}

int64_t head_dim(FuzzedDataProvider& fdp) {
  static constexpr int64_t kDims[] = {0, 1, 8, 16, 32, 64, 128, 256, 3};
  return fdp.ConsumeIntegralInRange<int>(0, 7) ? kDims[fdp.ConsumeIntegralInRange<int>(0, 8)]
                                               : size_arg(fdp, 0, 300);
}

// HstuAttnArgs from the input; false when a tensor would be too large.
bool hstu_args(FuzzedDataProvider& fdp, Arena& ar, recops::HstuAttnArgs* a) {
  const DType t = hstu_dtype(fdp);
  const bool jagged = fdp.ConsumeIntegralInRange<int>(0, 3) != 0;
  const int64_t B = fdp.ConsumeIntegralInRange<int>(0, 9) ? fdp.ConsumeIntegralInRange(0, 4)
                                                          : size_arg(fdp, 0, 8);
  const int64_t Hq = fdp.ConsumeIntegralInRange<int>(0, 9) ? fdp.ConsumeIntegralInRange(0, 4)
                                                           : size_arg(fdp, 0, 8);
  const int64_t Hk = fdp.ConsumeBool() ? Hq : fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  const int64_t d = head_dim(fdp);
  const int64_t dv = fdp.ConsumeIntegralInRange<int>(0, 3) ? d : head_dim(fdp);
  const DType off_t = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::int32 : DType::int64, 16);
  int64_t total_q = 0, total_k = 0, Sq = 0, Sk = 0;
  if (jagged) {
    const int64_t nb = B > 64 ? 64 : B;  // offsets are allocated
    TensorView oq, ok;
    if (!ar.offsets(nb, off_t, 40, &oq, &total_q, &Sq)) return false;
    if (fdp.ConsumeIntegralInRange<int>(0, 3)) {
      ok = oq;
      total_k = total_q;
      Sk = Sq;
    } else if (!ar.offsets(nb, off_t, 40, &ok, &total_k, &Sk)) {
      return false;
    }
    a->seq_offsets_q = oq;
    a->seq_offsets_k = ok;
    a->max_seq_len_q = fdp.ConsumeIntegralInRange<int>(0, 3) ? Sq : size_arg(fdp, 0, 64);
    a->max_seq_len_k = fdp.ConsumeIntegralInRange<int>(0, 3) ? Sk : size_arg(fdp, 0, 64);
    if (!ar.view({total_q, Hq, d}, t, &a->q) || !ar.view({total_k, Hk, d}, t, &a->k) ||
        !ar.view({total_k, Hk, dv}, t, &a->v))
      return false;
  } else {
    Sq = fdp.ConsumeIntegralInRange<int>(0, 9) ? fdp.ConsumeIntegralInRange(0, 33)
                                               : size_arg(fdp, 0, 8);
    Sk = fdp.ConsumeBool() ? Sq : fdp.ConsumeIntegralInRange<int64_t>(0, 33);
    a->max_seq_len_q = fdp.ConsumeIntegralInRange<int>(0, 3) ? Sq : size_arg(fdp, 0, 64);
    a->max_seq_len_k = fdp.ConsumeIntegralInRange<int>(0, 3) ? Sk : size_arg(fdp, 0, 64);
    total_q = TensorView::mul_sat(B, Sq);  // B or Sq may be huge (the other then 0)
    if (!ar.view({B, Sq, Hq, d}, t, &a->q) || !ar.view({B, Sk, Hk, d}, t, &a->k) ||
        !ar.view({B, Sk, Hk, dv}, t, &a->v))
      return false;
  }
  const int64_t nb = B > 64 ? 64 : B;
  const int64_t Smax = std::min<int64_t>(Sq > Sk ? Sq : Sk, INT32_MAX);  // Sq may be 2^62
  TensorView tmp;
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    if (!ar.ints({nb}, off_t, 0, Smax, &tmp)) return false;
    a->num_contexts = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    if (!ar.ints({nb}, off_t, 0, Smax, &tmp)) return false;
    a->num_targets = tmp;
    a->target_group_size = size_arg(fdp, 1, 4);
  }
  a->mask_type = static_cast<recops::HstuMaskType>(fdp.ConsumeIntegralInRange<int>(0, 4));
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    a->window_left = size_arg(fdp, -1, 8);
    a->window_right = size_arg(fdp, -1, 8);
  }
  const int64_t Hm = fdp.ConsumeBool() ? Hq : 1;
  const int64_t Sq4 = fdp.ConsumeIntegralInRange<int>(0, 7) ? a->max_seq_len_q : Sq;
  const int64_t Sk4 = fdp.ConsumeIntegralInRange<int>(0, 7) ? a->max_seq_len_k : Sk;
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) {
    if (!ar.view({nb, Hm, Sq4, Sk4}, fdp.ConsumeBool() ? DType::boolean : t, &tmp)) return false;
    a->mask = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 4) == 0) {
    if (!ar.view({nb, Hm, Sq4, Sk4}, dtype_or_any(fdp, t), &tmp)) return false;
    a->rab = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 6) == 0) {
    const int64_t nfunc = fdp.ConsumeIntegralInRange<int64_t>(0, 5);
    if (!ar.ints({Hm, nfunc, total_q}, dtype_or_any(fdp, DType::int32), -2, Smax + 2, &tmp))
      return false;
    a->func = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) a->alpha = real_arg(fdp, 0.125);
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) a->silu_scale = real_arg(fdp, 0.5);
  if (fdp.ConsumeIntegralInRange<int>(0, 6) == 0) {
    if (!ar.view({total_q}, dtype_or_any(fdp, DType::fp32), &tmp)) return false;
    a->attn_scale = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 6) == 0) {  // paged KV cache
    const int64_t page = fdp.ConsumeBool() ? 16 : size_arg(fdp, 1, 32);
    const int64_t pages = fdp.ConsumeIntegralInRange<int64_t>(0, 6);
    TensorView cache, poff, pids, plast;
    int64_t npids = 0, longest = 0;
    if (!ar.view({pages, 2, page, Hk, d}, t, &cache) ||
        !ar.offsets(nb, off_t, 3, &poff, &npids, &longest) ||
        !ar.ints({npids}, off_t, -1, pages, &pids) || !ar.ints({nb}, off_t, 0, page, &plast))
      return false;
    a->kv_cache = cache;
    a->page_offsets = poff;
    a->page_ids = pids;
    if (fdp.ConsumeIntegralInRange<int>(0, 7)) a->last_page_len = plast;
  }
  return true;
}

recops::Context ctx_arg(FuzzedDataProvider& fdp, std::initializer_list<const char*> impls) {
  recops::Context ctx;
  ctx.impl = impl_arg(fdp, impls);
  ctx.num_threads = fdp.ConsumeIntegralInRange<int>(0, 3);
  return ctx;
}

void fuzz_hstu_fwd(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  recops::HstuAttnArgs a;
  if (!hstu_args(fdp, ar, &a)) return;
  recops::Shape shape;
  if (!recops::hstu_attn_fwd_shape(a, &shape).ok()) return;
  TensorView out;
  if (!ar.output(shape, a.q.dtype, &out)) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) {
    (void)recops::hstu_attn_fwd_plain(a, out);
    return;
  }
  const recops::Context ctx = ctx_arg(fdp, {"reference", "cpu_generic", "cpu_avx2"});
  (void)recops::hstu_attn_fwd(a, out, ctx);
}

void fuzz_hstu_bwd(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  recops::HstuAttnArgs a;
  if (!hstu_args(fdp, ar, &a)) return;
  recops::Shape so, sq, sk, sv, srab;
  if (!recops::hstu_attn_fwd_shape(a, &so).ok()) return;
  if (!recops::hstu_attn_bwd_shape(a, &sq, &sk, &sv, &srab).ok()) return;
  TensorView dout, dq, dk, dv, drab;
  if (!ar.view(so, dtype_or_any(fdp, a.q.dtype), &dout) || !ar.output(sq, a.q.dtype, &dq) ||
      !ar.output(sk, a.k.dtype, &dk) || !ar.output(sv, a.v.dtype, &dv))
    return;
  const bool with_drab = a.rab.has_value() && fdp.ConsumeBool();
  if (with_drab && !ar.output(srab, a.rab->dtype, &drab)) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) {
    (void)recops::hstu_attn_bwd_plain(dout, a, dq, dk, dv, with_drab ? &drab : nullptr);
    return;
  }
  const recops::Context ctx = ctx_arg(fdp, {"reference", "cpu_generic", "cpu_avx2"});
  (void)recops::hstu_attn_bwd(dout, a, dq, dk, dv, with_drab ? &drab : nullptr, ctx);
}

DType stem_dtype(FuzzedDataProvider& fdp) {
  return dtype_or_any(fdp, pick(fdp, {DType::bf16, DType::fp16, DType::fp8_e4m3}));
}

// q [Tq, Nq, D], k/v packed [Tk, Nk, D] or paged [pages, page, Nk, D], cu_seqlens_q,
// kv_seq_lens, cu_seqlens_kv or block_table: shared by stem_prepare and block_sparse_attention.
struct StemInputs {
  TensorView q, k, v, cu_q, kv_lens;
  std::optional<TensorView> cu_kv, block_table;
  int64_t B = 0, Nq = 0, longest_q = 0;
};

bool stem_inputs(FuzzedDataProvider& fdp, Arena& ar, DType t, StemInputs* s) {
  s->B = fdp.ConsumeIntegralInRange<int64_t>(0, 3);
  s->Nq = fdp.ConsumeIntegralInRange<int>(0, 9) ? fdp.ConsumeIntegralInRange<int64_t>(0, 4)
                                                : size_arg(fdp, 0, 4);
  const int64_t Nk = fdp.ConsumeBool() ? 1 : fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  const int64_t D = fdp.ConsumeIntegralInRange<int>(0, 3) ? 16 * fdp.ConsumeIntegralInRange(0, 8)
                                                          : size_arg(fdp, 0, 40);
  const int64_t Dv = fdp.ConsumeIntegralInRange<int>(0, 3) ? D : head_dim(fdp);
  const DType it = dtype_or_any(fdp, DType::int32, 16);
  int64_t Tq = 0, Tk = 0, longest_k = 0;
  if (!ar.offsets(s->B, it, 300, &s->cu_q, &Tq, &s->longest_q)) return false;
  if (!ar.view({Tq, s->Nq, D}, t, &s->q)) return false;
  if (fdp.ConsumeIntegralInRange<int>(0, 3)) {  // packed
    TensorView cu;
    if (!ar.offsets(s->B, it, 300, &cu, &Tk, &longest_k)) return false;
    s->cu_kv = cu;
    if (!ar.view({Tk, Nk, D}, t, &s->k) || !ar.view({Tk, Nk, Dv}, t, &s->v)) return false;
  } else {  // paged
    const int64_t page = fdp.ConsumeBool() ? 16 : size_arg(fdp, 1, 64);
    const int64_t pages = fdp.ConsumeIntegralInRange<int64_t>(0, 8);
    const int64_t max_pages = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
    TensorView bt;
    if (!ar.view({pages, page, Nk, D}, t, &s->k) || !ar.view({pages, page, Nk, Dv}, t, &s->v) ||
        !ar.ints({s->B, max_pages}, it, -1, pages, &bt))
      return false;
    s->block_table = bt;
    longest_k = std::min<int64_t>(TensorView::mul_sat(page, max_pages), INT32_MAX);
  }
  if (!ar.ints({s->B}, it, 0, longest_k + 1, &s->kv_lens)) return false;
  return true;
}

void fuzz_stem_prepare(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  StemInputs s;
  const DType t = stem_dtype(fdp);
  if (!stem_inputs(fdp, ar, t, &s)) return;
  recops::StemPrepareArgs a;
  a.q = s.q;
  a.k = s.k;
  a.v = s.v;
  a.cu_seqlens_q = s.cu_q;
  a.kv_seq_lens = s.kv_lens;
  a.cu_seqlens_kv = s.cu_kv;
  a.block_table = s.block_table;
  TensorView tmp;
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    if (!ar.view({1}, dtype_or_any(fdp, DType::fp32), &tmp)) return;
    a.q_scale = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    if (!ar.view({1}, dtype_or_any(fdp, DType::fp32), &tmp)) return;
    a.k_scale = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    if (!ar.view({fdp.ConsumeBool() ? 1 : a.k.size(-2)}, dtype_or_any(fdp, DType::fp32), &tmp))
      return;
    a.v_scale = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) a.max_q_blocks = size_arg(fdp, -1, 4);
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) a.max_kv_blocks = size_arg(fdp, -1, 4);
  a.stem_block_size = fdp.ConsumeIntegralInRange<int>(0, 3) ? 16 << fdp.ConsumeIntegralInRange(0, 3)
                                                            : size_arg(fdp, 1, 256);
  a.stem_stride = fdp.ConsumeIntegralInRange<int>(0, 3) ? 16 >> fdp.ConsumeIntegralInRange(0, 3)
                                                        : size_arg(fdp, 1, 64);
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) a.lambda_mag = real_arg(fdp, 0.3);
  recops::Context ctx = ctx_arg(fdp, {"reference", "cpu_generic"});
  recops::Shape sq, sk, sv;
  if (!recops::stem_prepare_shape(a, &sq, &sk, &sv, ctx).ok()) return;
  TensorView qf, kf, vb;
  if (!ar.output(sq, DType::bf16, &qf) || !ar.output(sk, DType::bf16, &kf) ||
      !ar.output(sv, DType::fp32, &vb))
    return;
  (void)recops::stem_prepare(a, qf, kf, vb, ctx);
}

void fuzz_stem_indexer(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  recops::StemIndexerArgs a;
  const int64_t B = fdp.ConsumeIntegralInRange<int64_t>(0, 3);
  const int64_t Nk = fdp.ConsumeIntegralInRange<int64_t>(0, 3);
  const int64_t Nq = fdp.ConsumeBool() ? Nk : Nk * fdp.ConsumeIntegralInRange<int64_t>(0, 3);
  const int64_t Qmax = fdp.ConsumeIntegralInRange<int64_t>(0, 6);
  const int64_t Kmax = fdp.ConsumeIntegralInRange<int64_t>(0, 40);
  const int64_t Df = fdp.ConsumeIntegralInRange<int>(0, 3) ? 16 * fdp.ConsumeIntegralInRange(0, 4)
                                                           : size_arg(fdp, 0, 40);
  a.causal = fdp.ConsumeBool();
  a.stem_block_size = fdp.ConsumeIntegralInRange<int>(0, 3) ? 16 << fdp.ConsumeIntegralInRange(0, 3)
                                                            : size_arg(fdp, 1, 256);
  a.stem_stride = fdp.ConsumeIntegralInRange<int>(0, 3) ? 16 >> fdp.ConsumeIntegralInRange(0, 3)
                                                        : size_arg(fdp, 1, 64);
  const DType it = dtype_or_any(fdp, DType::int32, 16);
  const int64_t blk = a.stem_block_size > 0 && a.stem_block_size < 512 ? a.stem_block_size : 128;
  if (!ar.view({B, Nq, Qmax, Df}, dtype_or_any(fdp, DType::bf16), &a.qflat) ||
      !ar.view({B, Nk, Kmax, Df}, dtype_or_any(fdp, DType::bf16), &a.kflat) ||
      !ar.view({B, Nk, Kmax}, dtype_or_any(fdp, DType::fp32), &a.vbias) ||
      !ar.ints({B}, it, 0, Qmax * blk + 1, &a.q_seq_lens) ||
      !ar.ints({B}, it, 0, Kmax * blk + 1, &a.kv_seq_lens))
    return;
  TensorView tmp;
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    if (!ar.ints({B}, it, 0, Kmax * blk + 2, &tmp)) return;
    a.num_prompt_tokens = tmp;
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) a.alpha = real_arg(fdp, 0.5);
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {
    a.initial_blocks = size_arg(fdp, 0, 8);
    a.window_size = size_arg(fdp, 0, 8);
    a.k_block_num_rate_medium = real_arg(fdp, 0.2);
    a.k_block_num_bias_medium = size_arg(fdp, 0, 40);
    a.k_block_num_rate_large = real_arg(fdp, 0.1);
    a.k_block_num_bias_large = size_arg(fdp, 0, 40);
    a.topk_score_precision = size_arg(fdp, 1, 2);
  }
  if (fdp.ConsumeIntegralInRange<int>(0, 3) == 0) {  // metadata from its own entry
    recops::StemIndexerMetadataArgs m;
    m.q_seq_lens = a.q_seq_lens;
    m.kv_seq_lens = a.kv_seq_lens;
    m.q_heads = fdp.ConsumeIntegralInRange<int>(0, 3) ? Nq : size_arg(fdp, 0, 8);
    m.kv_heads = fdp.ConsumeIntegralInRange<int>(0, 3) ? Nk : size_arg(fdp, 0, 8);
    m.causal = a.causal;
    m.stem_block_size =
        fdp.ConsumeIntegralInRange<int>(0, 3) ? a.stem_block_size : size_arg(fdp, 1, 256);
    m.dim_qkflat = fdp.ConsumeIntegralInRange<int>(0, 3) ? Df : size_arg(fdp, 0, 4096);
    m.window_size = fdp.ConsumeIntegralInRange<int>(0, 3) ? a.window_size : size_arg(fdp, 0, 8);
    recops::Shape ms;
    if (!recops::stem_indexer_metadata_shape(m, &ms).ok()) return;
    if (!ar.output(ms, DType::int32, &tmp)) return;
    if (!recops::stem_indexer_metadata(m, tmp).ok()) return;
    a.metadata = tmp;
  }
  recops::Shape si, sl;
  if (!recops::stem_indexer_shape(a, &si, &sl).ok()) return;
  TensorView idx, len;
  if (!ar.output(si, DType::int32, &idx) || !ar.output(sl, DType::int32, &len)) return;
  (void)recops::stem_indexer(a, idx, len, ctx_arg(fdp, {"reference", "cpu_generic"}));
}

void fuzz_block_sparse_attention(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  StemInputs s;
  const DType t = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::bf16 : DType::fp16);
  if (!stem_inputs(fdp, ar, t, &s)) return;
  recops::BlockSparseAttentionArgs a;
  a.q = s.q;
  a.k = s.k;
  a.v = s.v;
  a.cu_seqlens_q = s.cu_q;
  a.kv_seq_lens = s.kv_lens;
  a.cu_seqlens_kv = s.cu_kv;
  a.block_table = s.block_table;
  a.causal = fdp.ConsumeBool();
  a.sparse_block_size = fdp.ConsumeIntegralInRange<int>(0, 3)
                            ? 16 << fdp.ConsumeIntegralInRange(0, 3)
                            : size_arg(fdp, 1, 256);
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) a.softmax_scale = real_arg(fdp, 0.1);
  const int64_t blk =
      a.sparse_block_size > 0 && a.sparse_block_size < 512 ? a.sparse_block_size : 128;
  const int64_t Qmax = fdp.ConsumeIntegralInRange<int>(0, 5)
                           ? (s.longest_q + blk - 1) / blk
                           : fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  const int64_t Kmax = fdp.ConsumeIntegralInRange<int64_t>(0, 12);
  const DType it = dtype_or_any(fdp, DType::int32, 16);
  if (!ar.ints({s.B, s.Nq, Qmax, Kmax}, it, -1, Kmax + 1, &a.sparse_indices) ||
      !ar.ints({s.B, s.Nq, Qmax}, it, -1, Kmax + 1, &a.sparse_seq_len))
    return;
  recops::Shape so, sl;
  if (!recops::block_sparse_attention_shape(a, &so, &sl).ok()) return;
  TensorView out, lse;
  if (!ar.output(so, t, &out) || !ar.output(sl, DType::fp32, &lse)) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) {
    (void)recops::block_sparse_attention_plain(a, out, lse);
    return;
  }
  (void)recops::block_sparse_attention(a, out, lse, ctx_arg(fdp, {"reference", "cpu_generic"}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  try {
    switch (fdp.ConsumeIntegralInRange<int>(0, 4)) {
      case 0: fuzz_hstu_fwd(fdp); break;
      case 1: fuzz_hstu_bwd(fdp); break;
      case 2: fuzz_stem_prepare(fdp); break;
      case 3: fuzz_stem_indexer(fdp); break;
      default: fuzz_block_sparse_attention(fdp); break;
    }
  } catch (const recops::Error&) {
    // Tensor::empty refusing a size is the harness's limit, not a finding.
  }
  return 0;
}
