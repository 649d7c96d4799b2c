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

  // Offsets validation of CUDA calls (jagged_ops.md §1.2); the CPU always validates.
  m.def("set_validate(bool on) -> ()", &set_validate);
}
