// Stem family (stem_indexer.md), CUDA kernels: device guard and torch's current stream, then the
// bodies shared with the CPU file (stem_cpu.cpp). No host synchronisation in the ops themselves
// when max_q_blocks / max_kv_blocks are given and value checks are off (recops.set_validate);
// with value checks on, the lengths are read on the host (spec §2). stem_indexer_metadata is a
// host computation on every backend (one device-to-host copy of the lengths).
#include <torch/library.h>

#include "torch/cuda_context.h"
#include "torch/ops/stem_common.h"

namespace recops::binding {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> stem_prepare_cuda(RECOPS_STEM_PREPARE_DECL) {
  const c10::cuda::CUDAGuard guard(q.device());
  return run_stem_prepare(RECOPS_STEM_PREPARE_PASS, cuda_context(q));
}
std::tuple<at::Tensor, at::Tensor> stem_indexer_cuda(RECOPS_STEM_INDEXER_DECL) {
  const c10::cuda::CUDAGuard guard(qflat.device());
  return run_stem_indexer(RECOPS_STEM_INDEXER_PASS, cuda_context(qflat));
}
at::Tensor stem_indexer_metadata_cuda(const at::Tensor& q_seq_lens, const at::Tensor& kv_seq_lens,
                                      int64_t q_heads, int64_t kv_heads, bool causal,
                                      int64_t stem_block_size, int64_t dim_qkflat,
                                      int64_t window_size) {
  const c10::cuda::CUDAGuard guard(q_seq_lens.device());
  return run_stem_indexer_metadata(q_seq_lens, kv_seq_lens, q_heads, kv_heads, causal,
                                   stem_block_size, dim_qkflat, window_size,
                                   cuda_context(q_seq_lens));
}
std::tuple<at::Tensor, at::Tensor> block_sparse_attention_cuda(RECOPS_BSA_DECL) {
  const c10::cuda::CUDAGuard guard(q.device());
  return run_block_sparse_attention(RECOPS_BSA_PASS, cuda_context(q));
}

}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CUDA, m) {
  m.impl("stem_prepare", TORCH_FN(recops::binding::stem_prepare_cuda));
  m.impl("stem_indexer", TORCH_FN(recops::binding::stem_indexer_cuda));
  m.impl("stem_indexer_metadata", TORCH_FN(recops::binding::stem_indexer_metadata_cuda));
  m.impl("block_sparse_attention", TORCH_FN(recops::binding::block_sparse_attention_cuda));
}
