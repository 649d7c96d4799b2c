// hstu_attn_fwd, Autograd kernel (hstu_attention.md §1): the backward is hstu_attn_bwd, giving
// dq, dk, dv and (when rab requires grad) drab. Offsets, counts, masks, scales and the paged cache
// get no gradient; double backward raises.
#include <torch/autograd.h>
#include <torch/library.h>

#include "torch/ops/hstu_attn_common.h"

namespace recops::binding {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::optional<at::Tensor> saved(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

class HstuAttn : public torch::autograd::Function<HstuAttn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, RECOPS_HSTU_ARGS_DECL) {
    auto keep = [](const std::optional<at::Tensor>& t) { return t ? *t : at::Tensor(); };
    ctx->save_for_backward({q, k, v, keep(seq_offsets_q), keep(seq_offsets_k), keep(num_contexts),
                            keep(num_targets), keep(mask), keep(func), keep(rab),
                            keep(attn_scale)});
    ctx->saved_data["ints"] = std::vector<int64_t>{max_seq_len_q, max_seq_len_k, target_group_size,
                                                   window_left,   window_right,  mask_type};
    ctx->saved_data["alpha"] = alpha ? c10::IValue(*alpha) : c10::IValue();
    ctx->saved_data["silu_scale"] = silu_scale ? c10::IValue(*silu_scale) : c10::IValue();
    ctx->saved_data["rab_grad"] = rab.has_value() && rab->defined() && rab->requires_grad();
    ctx->saved_data["paged"] = kv_cache.has_value() && kv_cache->defined();
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_hstu_attn_fwd(RECOPS_HSTU_ARGS_PASS);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TORCH_CHECK(!(at::GradMode::is_enabled() && grads[0].requires_grad()),
                "hstu_attn: double backward is not supported");
    TORCH_CHECK(!ctx->saved_data["paged"].toBool(),
                "hstu_attn: paged KV is inference only (no gradient is defined for the cache)");
    const auto s = ctx->get_saved_variables();
    const auto ints = ctx->saved_data["ints"].toIntVector();
    const c10::IValue al = ctx->saved_data["alpha"], ss = ctx->saved_data["silu_scale"];
    const bool rab_grad = ctx->saved_data["rab_grad"].toBool();
    const std::optional<double> alpha = al.isNone() ? std::nullopt : std::optional(al.toDouble());
    const std::optional<double> silu_scale =
        ss.isNone() ? std::nullopt : std::optional(ss.toDouble());
    auto [dq, dk, dv, drab] =
        call_hstu_attn_bwd(grads[0], s[0], s[1], s[2], saved(s[3]), saved(s[4]), ints[0], ints[1],
                           saved(s[5]), saved(s[6]), ints[2], ints[3], ints[4], ints[5],
                           saved(s[7]), saved(s[8]), saved(s[9]), alpha, silu_scale, saved(s[10]),
                           std::nullopt, std::nullopt, std::nullopt, std::nullopt, rab_grad);
    variable_list out(23);  // one entry per forward argument
    out[0] = dq;
    out[1] = dk;
    out[2] = dv;
    if (rab_grad) out[15] = drab;
    return out;
  }
};

at::Tensor hstu_attn_fwd_autograd(RECOPS_HSTU_ARGS_DECL) {
  return HstuAttn::apply(RECOPS_HSTU_ARGS_PASS);
}

}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Autograd, m) {
  m.impl("hstu_attn_fwd", TORCH_FN(recops::binding::hstu_attn_fwd_autograd));
}
