// recops/hstu.h: HSTU attention (spec: hstu_attention.md), forward and backward.
//
// Letters (src/ops/hstu/hstu_attn/README.md): B sequences, Hq query heads, Hk key/value heads
// (Hq % Hk == 0), d the q/k head dim, dv the v/output head dim, Lq / Lk the lengths of one
// sequence, total_q / total_k the jagged token counts, Sq / Sk the padded extents
// (= max_seq_len_q / max_seq_len_k).
//
// Per sequence and query head, with M the mask of spec §3:
//   S = alpha * (Q K^T + rab),  P = M ⊙ SiLU(S),  O = silu_scale * P V
// alpha multiplies rab too (NVIDIA convention): pass rab / alpha to get SiLU(alpha QK^T + rab).
//
// Every op writes into outputs the caller allocated with the shape its *_shape function gives.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

// The seed's mask_type 0/1/2/3. causal / anti_causal / none are presets of the window.
enum class HstuMaskType : uint8_t { causal = 0, anti_causal = 1, none = 2, custom = 3 };

// Every argument of spec §2. Optional tensors are std::nullopt when not given.
struct HstuAttnArgs {
  // q: jagged [total_q, Hq, d] or dense [B, Sq, Hq, d]; fp32, fp16 or bf16 (fp64 for tests and
  // gradcheck: the reference runs it).
  TensorView q;
  // k: jagged [total_k, Hk, d] or dense [B, Sk, Hk, d]; v: same with dv last. Same dtype as q.
  TensorView k, v;
  // Jagged layout: both offsets [B+1] (int32 or int64, first 0, non-decreasing, last = total).
  // Dense layout: both absent.
  std::optional<TensorView> seq_offsets_q, seq_offsets_k;
  int64_t max_seq_len_q = 0;  // bound of every Lq; the dense Sq
  int64_t max_seq_len_k = 0;  // bound of every Lk (cached + new tokens with paged KV); dense Sk
  std::optional<TensorView> num_contexts;  // [B] int32/int64, 0 <= C <= Lk
  std::optional<TensorView> num_targets;   // [B] int32/int64, 0 <= T <= Lk
  int64_t target_group_size = 1;           // >= 1
  // Local window (left, right); -1 is unbounded. (-1, 0) causal, (0, -1) anti-causal,
  // (-1, -1) no mask. Only with mask_type causal (the other presets fix the window).
  int64_t window_left = -1, window_right = 0;
  HstuMaskType mask_type = HstuMaskType::causal;
  // mask: [B, Hq or 1, Sq, Sk], bool or q's dtype, nonzero = keep (mask_type custom only).
  std::optional<TensorView> mask;
  // func: [Hq or 1, nfunc, total_q] int32, nfunc odd: row keeps c in [0,F0) ∪ [F1,F2) ∪ ...
  std::optional<TensorView> func;
  // rab: [B, Hq or 1, Sq, Sk], q's dtype (head-broadcast when 1).
  std::optional<TensorView> rab;
  std::optional<double> alpha;       // default 1/sqrt(d)
  std::optional<double> silu_scale;  // default 1/max_seq_len_q
  // attn_scale: [total_q] fp32, per query token; replaces silu_scale.
  std::optional<TensorView> attn_scale;
  // Paged KV cache (forward only): kv_cache [num_pages, 2, page_size, Hk, d] (q's dtype,
  // page_size in {16, 32, 64, 128, 256}); page_offsets [B+1]; page_ids [page_offsets[B]];
  // last_page_len [B] (1..page_size for a sequence with pages). All four or none; needs dv == d.
  std::optional<TensorView> kv_cache, page_offsets, page_ids, last_page_len;
};

// out: like q with dv in the last dim, q's dtype.
Status hstu_attn_fwd_shape(const HstuAttnArgs& a, Shape* out_shape);
Status hstu_attn_fwd(const HstuAttnArgs& a, const TensorView& out, const Context& ctx = {});

// dq, dk, dv: like q, k, v; drab: like rab (only when rab is given and a gradient is wanted).
Status hstu_attn_bwd_shape(const HstuAttnArgs& a, Shape* dq_shape, Shape* dk_shape, Shape* dv_shape,
                           Shape* drab_shape);
// dout: like out. drab may be nullptr (no rab gradient). Deterministic (fixed reduction order).
Status hstu_attn_bwd(const TensorView& dout, const HstuAttnArgs& a, const TensorView& dq,
                     const TensorView& dk, const TensorView& dv, const TensorView* drab,
                     const Context& ctx = {});

// The valid mask M (spec §3) of sequence `seq` and query head `head`, as the reference evaluates
// it: out bool [max_seq_len_q, max_seq_len_k], out[i, c] = M[i, c] for i < Lq, c < Lk, false
// elsewhere. For users to see what a configuration attends to (recops.hstu_mask).
Status hstu_attn_mask(const HstuAttnArgs& a, int64_t seq, int64_t head, const TensorView& out);

// The accuracy standard's plain same-precision baseline (accuracy.md, `double`): the reference
// computed in the inputs' dtype, rounding the intermediates a framework composition rounds
// (scores, P, dP, G to the dtype; fp32 accumulation). For the CLI and the tests.
Status hstu_attn_fwd_plain(const HstuAttnArgs& a, const TensorView& out);
Status hstu_attn_bwd_plain(const TensorView& dout, const HstuAttnArgs& a, const TensorView& dq,
                           const TensorView& dk, const TensorView& dv, const TensorView* drab);

}  // namespace recops
