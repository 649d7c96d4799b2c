// torch/ops/hstu_attn_common.h: the argument list of hstu_attn_fwd / hstu_attn_bwd (schema.cpp)
// spelled once, its conversion to recops::HstuAttnArgs, and the typed dispatcher handles the
// Autograd kernel calls. The macros keep the 23 arguments in one order in every file.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <tuple>

#include "recops/hstu.h"
#include "torch/convert.h"

// The schema's arguments after q, k, v (same order as in schema.cpp).
#define RECOPS_HSTU_ARGS_DECL                                                                      \
  const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,                                   \
      const std::optional<at::Tensor>&seq_offsets_q,                                               \
      const std::optional<at::Tensor>&seq_offsets_k, int64_t max_seq_len_q, int64_t max_seq_len_k, \
      const std::optional<at::Tensor>&num_contexts, const std::optional<at::Tensor>&num_targets,   \
      int64_t target_group_size, int64_t window_left, int64_t window_right, int64_t mask_type,     \
      const std::optional<at::Tensor>&mask, const std::optional<at::Tensor>&func,                  \
      const std::optional<at::Tensor>&rab, std::optional<double> alpha,                            \
      std::optional<double> silu_scale, const std::optional<at::Tensor>&attn_scale,                \
      const std::optional<at::Tensor>&kv_cache, const std::optional<at::Tensor>&page_offsets,      \
      const std::optional<at::Tensor>&page_ids, const std::optional<at::Tensor>&last_page_len
#define RECOPS_HSTU_ARGS_PASS                                                                      \
  q, k, v, seq_offsets_q, seq_offsets_k, max_seq_len_q, max_seq_len_k, num_contexts, num_targets,  \
      target_group_size, window_left, window_right, mask_type, mask, func, rab, alpha, silu_scale, \
      attn_scale, kv_cache, page_offsets, page_ids, last_page_len
#define RECOPS_HSTU_ARGS_TYPES                                                               \
  const at::Tensor&, const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, \
      const std::optional<at::Tensor>&, int64_t, int64_t, const std::optional<at::Tensor>&,  \
      const std::optional<at::Tensor>&, int64_t, int64_t, int64_t, int64_t,                  \
      const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,                    \
      const std::optional<at::Tensor>&, std::optional<double>, std::optional<double>,        \
      const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,                    \
      const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,                    \
      const std::optional<at::Tensor>&

namespace recops::binding {

// Views of the arguments (no copies: the entry validates layouts and strides itself).
inline HstuAttnArgs hstu_args(const char* op, RECOPS_HSTU_ARGS_DECL) {
  auto opt = [&](const std::optional<at::Tensor>& t,
                 const char* name) -> std::optional<TensorView> {
    if (!t || !t->defined()) return std::nullopt;
    return to_view(*t, op, name);
  };
  HstuAttnArgs a;
  a.q = to_view(q, op, "q");
  a.k = to_view(k, op, "k");
  a.v = to_view(v, op, "v");
  a.seq_offsets_q = opt(seq_offsets_q, "seq_offsets_q");
  a.seq_offsets_k = opt(seq_offsets_k, "seq_offsets_k");
  a.max_seq_len_q = max_seq_len_q;
  a.max_seq_len_k = max_seq_len_k;
  a.num_contexts = opt(num_contexts, "num_contexts");
  a.num_targets = opt(num_targets, "num_targets");
  a.target_group_size = target_group_size;
  a.window_left = window_left;
  a.window_right = window_right;
  TORCH_CHECK(mask_type >= 0 && mask_type <= 3, op, ": mask_type=", mask_type,
              " must be 0 (causal), 1 (anti_causal), 2 (none) or 3 (custom)");
  a.mask_type = static_cast<HstuMaskType>(mask_type);
  a.mask = opt(mask, "mask");
  a.func = opt(func, "func");
  a.rab = opt(rab, "rab");
  a.alpha = alpha;
  a.silu_scale = silu_scale;
  a.attn_scale = opt(attn_scale, "attn_scale");
  a.kv_cache = opt(kv_cache, "kv_cache");
  a.page_offsets = opt(page_offsets, "page_offsets");
  a.page_ids = opt(page_ids, "page_ids");
  a.last_page_len = opt(last_page_len, "last_page_len");
  return a;
}

inline at::Tensor call_hstu_attn_fwd(RECOPS_HSTU_ARGS_DECL) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("recops::hstu_attn_fwd", "")
                             .typed<at::Tensor(RECOPS_HSTU_ARGS_TYPES)>();
  return op.call(RECOPS_HSTU_ARGS_PASS);
}

using HstuGrads = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

inline HstuGrads call_hstu_attn_bwd(const at::Tensor& dout, RECOPS_HSTU_ARGS_DECL, bool want_drab) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("recops::hstu_attn_bwd", "")
                             .typed<HstuGrads(const at::Tensor&, RECOPS_HSTU_ARGS_TYPES, bool)>();
  return op.call(dout, RECOPS_HSTU_ARGS_PASS, want_drab);
}

}  // namespace recops::binding
