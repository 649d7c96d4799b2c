// Stem family (stem_indexer.md), binding helpers shared by the CPU, CUDA and Meta kernels: the
// op arguments from at::Tensors (innermost stride made 1, index tensors made contiguous where the
// entry needs it), and the Status -> exception rule of spec §10 (TypeError for dtype errors,
// NotImplementedError, ValueError for the rest).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <optional>

#include "recops/sparse_attn.h"
#include "torch/convert.h"

namespace recops::binding {

inline void stem_check(const Status& s) {
  if (s.ok()) return;
  if (s.code() == StatusCode::not_implemented) TORCH_CHECK_NOT_IMPLEMENTED(false, s.message());
  if (s.message().find("must have dtype") != std::string::npos)
    TORCH_CHECK_TYPE(false, s.message());
  TORCH_CHECK_VALUE(false, s.message());
}

// A tensor whose innermost stride is 1 (a contiguous copy otherwise); other strides free.
inline at::Tensor inner_dense(const at::Tensor& t) {
  return t.dim() == 0 || t.stride(-1) == 1 || t.size(-1) <= 1 ? t : t.contiguous();
}

// Keeps the tensors that the views point into alive for the call.
struct StemHold {
  std::vector<at::Tensor> keep;
  TensorView view(const at::Tensor& t, const char* op, const char* arg, bool contiguous = false) {
    keep.push_back(contiguous ? t.contiguous() : inner_dense(t));
    return to_view(keep.back(), op, arg);
  }
  std::optional<TensorView> view(const std::optional<at::Tensor>& t, const char* op,
                                 const char* arg, bool contiguous = false) {
    if (!t) return std::nullopt;
    return view(*t, op, arg, contiguous);
  }
};

#define RECOPS_STEM_INDEXER_DECL                                                                   \
  const at::Tensor &qflat, const at::Tensor &kflat, const at::Tensor &vbias,                       \
      const at::Tensor &q_seq_lens, const at::Tensor &kv_seq_lens,                                 \
      const std::optional<at::Tensor>&num_prompt_tokens, const std::optional<at::Tensor>&metadata, \
      bool causal, int64_t stem_block_size, int64_t stem_stride, double alpha,                     \
      int64_t initial_blocks, int64_t window_size, double k_block_num_rate_medium,                 \
      int64_t k_block_num_bias_medium, double k_block_num_rate_large,                              \
      int64_t k_block_num_bias_large, int64_t topk_score_precision
#define RECOPS_STEM_INDEXER_PASS                                                                 \
  qflat, kflat, vbias, q_seq_lens, kv_seq_lens, num_prompt_tokens, metadata, causal,             \
      stem_block_size, stem_stride, alpha, initial_blocks, window_size, k_block_num_rate_medium, \
      k_block_num_bias_medium, k_block_num_rate_large, k_block_num_bias_large,                   \
      topk_score_precision

inline StemIndexerArgs stem_indexer_args(StemHold& h, RECOPS_STEM_INDEXER_DECL) {
  const char* op = "stem_indexer";
  StemIndexerArgs a;
  a.qflat = h.view(qflat, op, "qflat");
  a.kflat = h.view(kflat, op, "kflat");
  a.vbias = h.view(vbias, op, "vbias");
  a.q_seq_lens = h.view(q_seq_lens, op, "q_seq_lens");
  a.kv_seq_lens = h.view(kv_seq_lens, op, "kv_seq_lens");
  a.num_prompt_tokens = h.view(num_prompt_tokens, op, "num_prompt_tokens");
  a.metadata = h.view(metadata, op, "metadata", true);
  a.causal = causal;
  a.stem_block_size = stem_block_size;
  a.stem_stride = stem_stride;
  a.alpha = alpha;
  a.initial_blocks = initial_blocks;
  a.window_size = window_size;
  a.k_block_num_rate_medium = k_block_num_rate_medium;
  a.k_block_num_bias_medium = k_block_num_bias_medium;
  a.k_block_num_rate_large = k_block_num_rate_large;
  a.k_block_num_bias_large = k_block_num_bias_large;
  a.topk_score_precision = topk_score_precision;
  return a;
}

#define RECOPS_STEM_PREPARE_DECL                                                                 \
  const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const at::Tensor &cu_seqlens_q, \
      const at::Tensor &kv_seq_lens, const std::optional<at::Tensor>&cu_seqlens_kv,              \
      const std::optional<at::Tensor>&block_table, const std::optional<at::Tensor>&q_scale,      \
      const std::optional<at::Tensor>&k_scale, const std::optional<at::Tensor>&v_scale,          \
      int64_t max_q_blocks, int64_t max_kv_blocks, int64_t stem_block_size, int64_t stem_stride, \
      double lambda_mag
#define RECOPS_STEM_PREPARE_PASS                                                             \
  q, k, v, cu_seqlens_q, kv_seq_lens, cu_seqlens_kv, block_table, q_scale, k_scale, v_scale, \
      max_q_blocks, max_kv_blocks, stem_block_size, stem_stride, lambda_mag

inline StemPrepareArgs stem_prepare_args(StemHold& h, RECOPS_STEM_PREPARE_DECL) {
  const char* op = "stem_prepare";
  StemPrepareArgs a;
  a.q = h.view(q, op, "q");
  a.k = h.view(k, op, "k");
  a.v = h.view(v, op, "v");
  a.cu_seqlens_q = h.view(cu_seqlens_q, op, "cu_seqlens_q");
  a.kv_seq_lens = h.view(kv_seq_lens, op, "kv_seq_lens");
  a.cu_seqlens_kv = h.view(cu_seqlens_kv, op, "cu_seqlens_kv");
  a.block_table = h.view(block_table, op, "block_table", true);
  a.q_scale = h.view(q_scale, op, "q_scale", true);
  a.k_scale = h.view(k_scale, op, "k_scale", true);
  a.v_scale = h.view(v_scale, op, "v_scale", true);
  a.max_q_blocks = max_q_blocks;
  a.max_kv_blocks = max_kv_blocks;
  a.stem_block_size = stem_block_size;
  a.stem_stride = stem_stride;
  a.lambda_mag = lambda_mag;
  return a;
}

#define RECOPS_BSA_DECL                                                                            \
  const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const at::Tensor &sparse_indices, \
      const at::Tensor &sparse_seq_len, const at::Tensor &cu_seqlens_q,                            \
      const at::Tensor &kv_seq_lens, const std::optional<at::Tensor>&cu_seqlens_kv,                \
      const std::optional<at::Tensor>&block_table, std::optional<double> softmax_scale,            \
      bool causal, int64_t sparse_block_size
#define RECOPS_BSA_PASS                                                                           \
  q, k, v, sparse_indices, sparse_seq_len, cu_seqlens_q, kv_seq_lens, cu_seqlens_kv, block_table, \
      softmax_scale, causal, sparse_block_size

inline BlockSparseAttentionArgs bsa_args(StemHold& h, RECOPS_BSA_DECL) {
  const char* op = "block_sparse_attention";
  BlockSparseAttentionArgs a;
  a.q = h.view(q, op, "q");
  a.k = h.view(k, op, "k");
  a.v = h.view(v, op, "v");
  a.sparse_indices = h.view(sparse_indices, op, "sparse_indices", true);
  a.sparse_seq_len = h.view(sparse_seq_len, op, "sparse_seq_len", true);
  a.cu_seqlens_q = h.view(cu_seqlens_q, op, "cu_seqlens_q");
  a.kv_seq_lens = h.view(kv_seq_lens, op, "kv_seq_lens");
  a.cu_seqlens_kv = h.view(cu_seqlens_kv, op, "cu_seqlens_kv");
  a.block_table = h.view(block_table, op, "block_table", true);
  a.softmax_scale = softmax_scale;
  a.causal = causal;
  a.sparse_block_size = sparse_block_size;
  return a;
}

// The kernels' bodies (stem_cpu.cpp), shared with the CUDA registrations.
std::tuple<at::Tensor, at::Tensor, at::Tensor> run_stem_prepare(RECOPS_STEM_PREPARE_DECL,
                                                                const Context& ctx);
std::tuple<at::Tensor, at::Tensor> run_stem_indexer(RECOPS_STEM_INDEXER_DECL, const Context& ctx);
at::Tensor run_stem_indexer_metadata(const at::Tensor& q_seq_lens, const at::Tensor& kv_seq_lens,
                                     int64_t q_heads, int64_t kv_heads, bool causal,
                                     int64_t stem_block_size, int64_t dim_qkflat,
                                     int64_t window_size, const Context& ctx);
std::tuple<at::Tensor, at::Tensor> run_block_sparse_attention(RECOPS_BSA_DECL, const Context& ctx);

}  // namespace recops::binding
