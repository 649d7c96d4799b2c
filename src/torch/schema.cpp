// torch/schema.cpp: every recops schema, in one TORCH_LIBRARY block (architecture.md §2 step 2).
// Kernels register per dispatch key in ops/<op>_{cpu,cuda,meta,autograd}.cpp.
//
// The jagged ops (the conversions and the cumsums) are not here: their schemas come from their
// argument tables (core/kit/op_def.h, registered by src/torch/kit.cpp).
#include <torch/library.h>

#include <string>
#include <vector>

#include "recops/context.h"

namespace {
void set_validate(bool on) {
  recops::set_validate(on);
}
}  // namespace

TORCH_LIBRARY(recops, m) {
  const std::vector<at::Tag> tags = {at::Tag::pt2_compliant_tag};

  // HSTU attention (hstu_attention.md; the argument meanings: include/recops/hstu.h). q jagged
  // [total_q, Hq, d] with both offsets, or dense [B, Sq, Hq, d] without; mask_type 0 causal,
  // 1 anti_causal, 2 none, 3 custom; alpha None = 1/sqrt(d), silu_scale None = 1/max_seq_len_q.
  const std::string hstu_args =
      "Tensor q, Tensor k, Tensor v, Tensor? seq_offsets_q, Tensor? seq_offsets_k, "
      "int max_seq_len_q, int max_seq_len_k, Tensor? num_contexts=None, "
      "Tensor? num_targets=None, int target_group_size=1, int window_left=-1, "
      "int window_right=0, int mask_type=0, Tensor? mask=None, Tensor? func=None, "
      "Tensor? rab=None, float? alpha=None, float? silu_scale=None, Tensor? attn_scale=None, "
      "Tensor? kv_cache=None, Tensor? page_offsets=None, Tensor? page_ids=None, "
      "Tensor? last_page_len=None";
  m.def(("hstu_attn_fwd(" + hstu_args + ") -> Tensor").c_str(), tags);
  // -> (dq, dk, dv, drab); drab is an empty [0] tensor unless want_drab and rab is given.
  m.def(("hstu_attn_bwd(Tensor dout, " + hstu_args +
         ", bool want_drab=False) -> (Tensor, Tensor, Tensor, Tensor)")
            .c_str(),
        tags);

  // The valid mask of one sequence and head, bool [max_seq_len_q, max_seq_len_k] (CPU).
  m.def(("hstu_mask(" + hstu_args + ", int seq=0, int head=0) -> Tensor").c_str(), tags);

  // The Stem family (stem_indexer.md; the argument meanings: include/recops/sparse_attn.h):
  // q, k, v -> (qflat, kflat, vbias) -> (sparse_indices, sparse_seq_len) -> (out, lse).
  m.def(
      "stem_prepare(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor kv_seq_lens, *, "
      "Tensor? cu_seqlens_kv=None, Tensor? block_table=None, Tensor? q_scale=None, "
      "Tensor? k_scale=None, Tensor? v_scale=None, int max_q_blocks=-1, int max_kv_blocks=-1, "
      "int stem_block_size=128, int stem_stride=16, float lambda_mag=0.3) "
      "-> (Tensor, Tensor, Tensor)",
      tags);
  m.def(
      "stem_indexer(Tensor qflat, Tensor kflat, Tensor vbias, Tensor q_seq_lens, "
      "Tensor kv_seq_lens, *, Tensor? num_prompt_tokens=None, Tensor? metadata=None, "
      "bool causal=True, int stem_block_size=128, int stem_stride=16, float alpha=1.0, "
      "int initial_blocks=4, int window_size=4, float k_block_num_rate_medium=0.2, "
      "int k_block_num_bias_medium=30, float k_block_num_rate_large=0.1, "
      "int k_block_num_bias_large=30, int topk_score_precision=1) -> (Tensor, Tensor)",
      tags);
  m.def(
      "stem_indexer_metadata(Tensor q_seq_lens, Tensor kv_seq_lens, int q_heads, int kv_heads, *, "
      "bool causal=True, int stem_block_size=128, int dim_qkflat=2048, int window_size=4) "
      "-> Tensor",
      tags);
  m.def(
      "block_sparse_attention(Tensor q, Tensor k, Tensor v, Tensor sparse_indices, "
      "Tensor sparse_seq_len, *, Tensor cu_seqlens_q, Tensor kv_seq_lens, "
      "Tensor? cu_seqlens_kv=None, Tensor? block_table=None, float? softmax_scale=None, "
      "bool causal=True, int sparse_block_size=128) -> (Tensor, Tensor)",
      tags);

  // Offsets validation of CUDA calls (jagged_ops.md §1.2); the CPU always validates.
  m.def("set_validate(bool on) -> ()", &set_validate);
}
