// Stem family (stem_indexer.md), Meta kernels: output shapes only. With concrete sizes the
// public shape functions decide (every rule that does not read tensor contents is checked, as
// spec §10 asks of Meta kernels); with symbolic sizes (torch.compile(dynamic=True)) the shapes are
// spelled in SymInts from the inputs' sizes and the real kernel checks the rules at run time.
// stem_prepare needs max_q_blocks and max_kv_blocks >= 0 here: -1 means a host read of the
// lengths, which tracing cannot do.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "torch/ops/stem_common.h"

namespace recops::binding {
namespace {

bool symbolic(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    if (!has_concrete_sizes(*t)) return true;
  return false;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> stem_prepare_meta(RECOPS_STEM_PREPARE_DECL) {
  TORCH_CHECK_VALUE(max_q_blocks >= 0 && max_kv_blocks >= 0,
                    "recops.stem_prepare: max_q_blocks=", max_q_blocks,
                    " and max_kv_blocks=", max_kv_blocks,
                    " must be given (>= 0) under torch.compile / on meta tensors; -1 reads the "
                    "lengths on the host");
  const auto bf = q.options().dtype(at::kBFloat16);
  if (symbolic({&q, &k, &v, &cu_seqlens_q})) {
    const c10::SymInt B = cu_seqlens_q.sym_size(0) - 1;
    const c10::SymInt Nk = k.sym_size(k.dim() - 2), Df = q.sym_size(2) * stem_stride;
    return {at::empty_symint({B, q.sym_size(1), max_q_blocks, Df}, bf),
            at::empty_symint({B, Nk, max_kv_blocks, Df}, bf),
            at::empty_symint({B, Nk, max_kv_blocks}, q.options().dtype(at::kFloat))};
  }
  StemHold h;
  const StemPrepareArgs a = stem_prepare_args(h, RECOPS_STEM_PREPARE_PASS);
  Shape sq, sk, sv;
  stem_check(stem_prepare_shape(a, &sq, &sk, &sv));
  return {new_output(sq, bf), new_output(sk, bf), new_output(sv, q.options().dtype(at::kFloat))};
}

std::tuple<at::Tensor, at::Tensor> stem_indexer_meta(RECOPS_STEM_INDEXER_DECL) {
  const auto opts = qflat.options().dtype(at::kInt);
  if (symbolic({&qflat, &kflat, &vbias, &q_seq_lens, &kv_seq_lens})) {
    return {at::empty_symint(
                {qflat.sym_size(0), qflat.sym_size(1), qflat.sym_size(2), kflat.sym_size(2)}, opts),
            at::empty_symint({qflat.sym_size(0), qflat.sym_size(1), qflat.sym_size(2)}, opts)};
  }
  StemHold h;
  const StemIndexerArgs a = stem_indexer_args(h, RECOPS_STEM_INDEXER_PASS);
  Shape si, sl;
  stem_check(stem_indexer_shape(a, &si, &sl));
  return {new_output(si, opts), new_output(sl, opts)};
}

at::Tensor stem_indexer_metadata_meta(const at::Tensor& q_seq_lens, const at::Tensor& kv_seq_lens,
                                      int64_t q_heads, int64_t kv_heads, bool causal,
                                      int64_t stem_block_size, int64_t dim_qkflat,
                                      int64_t window_size) {
  const auto opts = q_seq_lens.options().dtype(at::kInt);
  if (symbolic({&q_seq_lens, &kv_seq_lens}))
    return at::empty_symint({q_seq_lens.sym_size(0) * (2 * kv_heads) + 17}, opts);
  StemHold h;
  StemIndexerMetadataArgs a;
  a.q_seq_lens = h.view(q_seq_lens, "stem_indexer_metadata", "q_seq_lens");
  a.kv_seq_lens = h.view(kv_seq_lens, "stem_indexer_metadata", "kv_seq_lens");
  a.q_heads = q_heads;
  a.kv_heads = kv_heads;
  a.causal = causal;
  a.stem_block_size = stem_block_size;
  a.dim_qkflat = dim_qkflat;
  a.window_size = window_size;
  Shape s;
  stem_check(stem_indexer_metadata_shape(a, &s));
  return new_output(s, opts);
}

std::tuple<at::Tensor, at::Tensor> block_sparse_attention_meta(RECOPS_BSA_DECL) {
  if (symbolic({&q, &k, &v, &sparse_indices, &sparse_seq_len}))
    return {at::empty_symint(q.sym_sizes(), q.options()),
            at::empty_symint({q.sym_size(1), q.sym_size(0)}, q.options().dtype(at::kFloat))};
  StemHold h;
  const BlockSparseAttentionArgs a = bsa_args(h, RECOPS_BSA_PASS);
  Shape so, sl;
  stem_check(block_sparse_attention_shape(a, &so, &sl));
  return {new_output(so, q.options()), new_output(sl, q.options().dtype(at::kFloat))};
}

}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Meta, m) {
  m.impl("stem_prepare", TORCH_FN(recops::binding::stem_prepare_meta));
  m.impl("stem_indexer", TORCH_FN(recops::binding::stem_indexer_meta));
  m.impl("stem_indexer_metadata", TORCH_FN(recops::binding::stem_indexer_metadata_meta));
  m.impl("block_sparse_attention", TORCH_FN(recops::binding::block_sparse_attention_meta));
}
