// recops/sparse_attn.h: sparse long-context prefill (spec: stem_indexer.md), the Stem pipeline
//
//   q, k, v ──stem_prepare──► qflat, kflat, vbias ──stem_indexer──► sparse_indices, sparse_seq_len
//           ──block_sparse_attention(q, k, v, ...)──► out, lse
//
// Letters: B batches, Nq / Nk query / KV heads (G = Nq / Nk, KV head of hq is hq / G), D head dim,
// Bs = stem_block_size (128), Ts = stem_stride (16), R = Bs / Ts, Df = Ts·D. Per batch b: Lq, Lk,
// Lp (num_prompt_tokens, default Lk) tokens; Qb = ceil(Lq/Bs), Kb = ceil(Lk/Bs), P = ceil(Lp/Bs).
// Qmax / Kmax: the padded block dimensions of the tensors.
//
// Every op writes into outputs the caller allocated with the shape its *_shape function gives.
// Rules on tensor contents (lengths, metadata, selected ids) are value checks: always on the CPU,
// on CUDA when validate_enabled() (one small device-to-host copy and a sync per call).
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

// ---- stem_indexer (spec §3) ----
struct StemIndexerArgs {
  TensorView qflat;        // bf16 [B, Nq, Qmax, Df]
  TensorView kflat;        // bf16 [B, Nk, Kmax, Df], groups mirrored (stem_prepare)
  TensorView vbias;        // fp32 [B, Nk, Kmax]
  TensorView q_seq_lens;   // int32 [B], query tokens of the chunk
  TensorView kv_seq_lens;  // int32 [B], visible key tokens
  std::optional<TensorView> num_prompt_tokens;  // int32 [B], >= kv_seq_lens (default kv_seq_lens)
  std::optional<TensorView> metadata;           // int32 [2·B·Nk + 17] from stem_indexer_metadata
  bool causal = true;
  int64_t stem_block_size = 128;
  int64_t stem_stride = 16;
  double alpha = 1.0;  // (0, 1]
  int64_t initial_blocks = 4;
  int64_t window_size = 4;
  double k_block_num_rate_medium = 0.2;
  int64_t k_block_num_bias_medium = 30;
  double k_block_num_rate_large = 0.1;
  int64_t k_block_num_bias_large = 30;
  int64_t topk_score_precision = 1;  // 1: fp32 keys, 2: bf16-rounded keys
};

// sparse_indices int32 [B, Nq, Qmax, Kmax]; sparse_seq_len int32 [B, Nq, Qmax].
Status stem_indexer_shape(const StemIndexerArgs& a, Shape* sparse_indices, Shape* sparse_seq_len);
Status stem_indexer(const StemIndexerArgs& a, const TensorView& sparse_indices,
                    const TensorView& sparse_seq_len, const Context& ctx = {});

// ---- stem_indexer_metadata (spec §5): the optional load-balancing plan ----
struct StemIndexerMetadataArgs {
  TensorView q_seq_lens;   // int32 [B]
  TensorView kv_seq_lens;  // int32 [B]
  int64_t q_heads = 0;
  int64_t kv_heads = 0;
  bool causal = true;
  int64_t stem_block_size = 128;
  int64_t dim_qkflat = 2048;
  int64_t window_size = 4;
};
// out int32 [2·B·kv_heads + 17].
Status stem_indexer_metadata_shape(const StemIndexerMetadataArgs& a, Shape* out);
Status stem_indexer_metadata(const StemIndexerMetadataArgs& a, const TensorView& out,
                             const Context& ctx = {});

// ---- stem_prepare (spec §6) ----
struct StemPrepareArgs {
  TensorView q;             // bf16/fp16/fp8_e4m3 [Tq, Nq, D] packed
  TensorView k, v;          // q's dtype: packed [Tk, Nk, D/Dv] or paged [pages, page, Nk, D/Dv]
  TensorView cu_seqlens_q;  // int32 [B+1]
  TensorView kv_seq_lens;   // int32 [B]
  std::optional<TensorView> cu_seqlens_kv;  // int32 [B+1], packed K/V
  std::optional<TensorView> block_table;    // int32 [B, max_pages], paged K/V
  std::optional<TensorView> q_scale;        // fp32 [1] or [Tq, Nq]
  std::optional<TensorView> k_scale;        // fp32 [1], [Tk, Nk] packed or [pages, page, Nk]
  std::optional<TensorView> v_scale;        // fp32 [1] or [Nk]
  int64_t max_q_blocks = -1;                // Qmax; -1: the batch maximum of Qb (a host read)
  int64_t max_kv_blocks = -1;               // Kmax; -1: the batch maximum of Kb
  int64_t stem_block_size = 128;
  int64_t stem_stride = 16;
  double lambda_mag = 0.3;
};
// qflat bf16 [B, Nq, Qmax, Ts·D], kflat bf16 [B, Nk, Kmax, Ts·D], vbias fp32 [B, Nk, Kmax].
// With max_q_blocks or max_kv_blocks = -1 the lengths are read (device-to-host on CUDA).
Status stem_prepare_shape(const StemPrepareArgs& a, Shape* qflat, Shape* kflat, Shape* vbias,
                          const Context& ctx = {});
Status stem_prepare(const StemPrepareArgs& a, const TensorView& qflat, const TensorView& kflat,
                    const TensorView& vbias, const Context& ctx = {});

// ---- block_sparse_attention (spec §7) ----
struct BlockSparseAttentionArgs {
  TensorView q;               // bf16/fp16 [Tq, Nq, D]
  TensorView k, v;            // q's dtype, packed [Tk, Nk, D] or paged [pages, page, Nk, D]
  TensorView sparse_indices;  // int32 [B, Nq, Qmax, Kmax]
  TensorView sparse_seq_len;  // int32 [B, Nq, Qmax]
  TensorView cu_seqlens_q;    // int32 [B+1]
  TensorView kv_seq_lens;     // int32 [B]
  std::optional<TensorView> cu_seqlens_kv;
  std::optional<TensorView> block_table;
  std::optional<double> softmax_scale;  // default 1/sqrt(D)
  bool causal = true;
  int64_t sparse_block_size = 128;
};
// out [Tq, Nq, D] in q's dtype; lse fp32 [Nq, Tq] (natural log; -inf for rows with no key).
Status block_sparse_attention_shape(const BlockSparseAttentionArgs& a, Shape* out, Shape* lse);
Status block_sparse_attention(const BlockSparseAttentionArgs& a, const TensorView& out,
                              const TensorView& lse, const Context& ctx = {});
// The accuracy standard's plain same-precision baseline (accuracy.md, `double`): dense masked
// attention over the same block mask with scores and P rounded to q's dtype. CPU, for tests.
Status block_sparse_attention_plain(const BlockSparseAttentionArgs& a, const TensorView& out,
                                    const TensorView& lse);

}  // namespace recops
