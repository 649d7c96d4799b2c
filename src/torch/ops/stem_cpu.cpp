// Stem family (stem_indexer.md), CPU kernels and the bodies the CUDA kernels share.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "torch/ops/stem_common.h"

namespace recops::binding {

std::tuple<at::Tensor, at::Tensor, at::Tensor> run_stem_prepare(RECOPS_STEM_PREPARE_DECL,
                                                                const Context& ctx) {
  StemHold h;
  const StemPrepareArgs a = stem_prepare_args(h, RECOPS_STEM_PREPARE_PASS);
  Shape sq, sk, sv;
  stem_check(stem_prepare_shape(a, &sq, &sk, &sv, ctx));
  const auto opts = q.options();
  at::Tensor qflat = new_output(sq, opts.dtype(at::kBFloat16));
  at::Tensor kflat = new_output(sk, opts.dtype(at::kBFloat16));
  at::Tensor vbias = new_output(sv, opts.dtype(at::kFloat));
  stem_check(stem_prepare(a, to_view(qflat, "stem_prepare", "qflat"),
                          to_view(kflat, "stem_prepare", "kflat"),
                          to_view(vbias, "stem_prepare", "vbias"), ctx));
  return {qflat, kflat, vbias};
}

std::tuple<at::Tensor, at::Tensor> run_stem_indexer(RECOPS_STEM_INDEXER_DECL, const Context& ctx) {
  StemHold h;
  const StemIndexerArgs a = stem_indexer_args(h, RECOPS_STEM_INDEXER_PASS);
  Shape si, sl;
  stem_check(stem_indexer_shape(a, &si, &sl));
  const auto opts = qflat.options().dtype(at::kInt);
  at::Tensor idx = new_output(si, opts), len = new_output(sl, opts);
  stem_check(stem_indexer(a, to_view(idx, "stem_indexer", "sparse_indices"),
                          to_view(len, "stem_indexer", "sparse_seq_len"), ctx));
  return {idx, len};
}

at::Tensor run_stem_indexer_metadata(const at::Tensor& q_seq_lens, const at::Tensor& kv_seq_lens,
                                     int64_t q_heads, int64_t kv_heads, bool causal,
                                     int64_t stem_block_size, int64_t dim_qkflat,
                                     int64_t window_size, const Context& ctx) {
  const char* op = "stem_indexer_metadata";
  StemHold h;
  StemIndexerMetadataArgs a;
  a.q_seq_lens = h.view(q_seq_lens, op, "q_seq_lens");
  a.kv_seq_lens = h.view(kv_seq_lens, op, "kv_seq_lens");
  a.q_heads = q_heads;
  a.kv_heads = kv_heads;
  a.causal = causal;
  a.stem_block_size = stem_block_size;
  a.dim_qkflat = dim_qkflat;
  a.window_size = window_size;
  Shape s;
  stem_check(stem_indexer_metadata_shape(a, &s));
  at::Tensor out = new_output(s, q_seq_lens.options().dtype(at::kInt));
  stem_check(stem_indexer_metadata(a, to_view(out, op, "out"), ctx));
  return out;
}

std::tuple<at::Tensor, at::Tensor> run_block_sparse_attention(RECOPS_BSA_DECL, const Context& ctx) {
  const char* op = "block_sparse_attention";
  StemHold h;
  const BlockSparseAttentionArgs a = bsa_args(h, RECOPS_BSA_PASS);
  Shape so, sl;
  stem_check(block_sparse_attention_shape(a, &so, &sl));
  at::Tensor out = new_output(so, q.options());
  at::Tensor lse = new_output(sl, q.options().dtype(at::kFloat));
  stem_check(block_sparse_attention(a, to_view(out, op, "out"), to_view(lse, op, "lse"), ctx));
  return {out, lse};
}

namespace {
std::tuple<at::Tensor, at::Tensor, at::Tensor> stem_prepare_cpu(RECOPS_STEM_PREPARE_DECL) {
  return run_stem_prepare(RECOPS_STEM_PREPARE_PASS, cpu_context());
}
std::tuple<at::Tensor, at::Tensor> stem_indexer_cpu(RECOPS_STEM_INDEXER_DECL) {
  return run_stem_indexer(RECOPS_STEM_INDEXER_PASS, cpu_context());
}
at::Tensor stem_indexer_metadata_cpu(const at::Tensor& q_seq_lens, const at::Tensor& kv_seq_lens,
                                     int64_t q_heads, int64_t kv_heads, bool causal,
                                     int64_t stem_block_size, int64_t dim_qkflat,
                                     int64_t window_size) {
  return run_stem_indexer_metadata(q_seq_lens, kv_seq_lens, q_heads, kv_heads, causal,
                                   stem_block_size, dim_qkflat, window_size, cpu_context());
}
std::tuple<at::Tensor, at::Tensor> block_sparse_attention_cpu(RECOPS_BSA_DECL) {
  return run_block_sparse_attention(RECOPS_BSA_PASS, cpu_context());
}
}  // namespace

}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CPU, m) {
  m.impl("stem_prepare", TORCH_FN(recops::binding::stem_prepare_cpu));
  m.impl("stem_indexer", TORCH_FN(recops::binding::stem_indexer_cpu));
  m.impl("stem_indexer_metadata", TORCH_FN(recops::binding::stem_indexer_metadata_cpu));
  m.impl("block_sparse_attention", TORCH_FN(recops::binding::block_sparse_attention_cpu));
}
