// training/chunk_gated_delta_rule/chunk_gated_delta_rule.cpp: the entry of chunk_gated_delta_rule.
// All validation happens here, once, in training::GdnComposed (common/gdn_composed.h, shared with
// chunk_kda; g [B, T, HV], chunk_size 16, 32 or 64; the sub-ops the CPU path calls check their own
// arguments again); then the ordered implementation list runs the first implementation that
// accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). Here: the list, the workspace's
// layout, the C++ API and the registration (the forward with .backward(chunk_gated_delta_rule_bwd),
// and the backward).
#include "ops/training/chunk_gated_delta_rule/chunk_gated_delta_rule.h"

#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_gated_delta_rule/impls.h"
#include "ops/training/common/gdn_composed.h"

namespace recops::ops::chunk_gated_delta_rule_ns {
namespace {
constexpr const char* kOp = "chunk_gated_delta_rule";
constexpr const char* kBwd = "chunk_gated_delta_rule_bwd";

#ifdef RECOPS_WITH_CUDA
std::string cuda_accepts(const Params& p) {
  if (p.l2norm && (p.q_dtype == DType::fp64 || p.k_dtype == DType::fp64))
    return "fp64 q, k with use_qk_l2norm_in_kernel runs on the CPU only (l2norm's CUDA path has "
           "no fp64)";
  return core::cuda_capability_at_least<80, Params>(p);
}
#endif

const std::vector<core::Impl<Params>>& impls() {
  static const auto list = core::with_cpu_impls<Params>(
      {
#ifdef RECOPS_WITH_CUDA
          {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason, cuda_accepts, run_cuda},
#endif
      },
      run_cpu, run_reference);
  return list;
}

}  // namespace

Layout workspace_layout(const Params& p) {
  Layout l;
  training::WorkspaceParts w;
  if (p.l2norm) {
    l.qn = w.part({p.B, p.T, p.H, p.K}, p.q_dtype);
    l.kn = w.part({p.B, p.T, p.H, p.K}, p.k_dtype);
  }
  l.G = w.part({p.B, p.T, p.HV}, DType::fp32);
  l.A = w.part({p.B, p.T, p.HV, p.BT}, DType::fp32);
  l.Ai = w.part({p.B, p.T, p.HV, p.BT}, DType::fp32);
  l.w = w.part({p.B, p.T, p.HV, p.K}, p.k_dtype);
  l.u = w.part({p.B, p.T, p.HV, p.V}, p.v_dtype);
  l.h = w.part({p.B, p.NT, p.HV, p.K, p.V}, p.k_dtype);
  l.v_new = w.part({p.B, p.T, p.HV, p.V}, p.v_dtype);
  if (p.bwd) {
    l.dv_local = w.part({p.B, p.T, p.HV, p.V}, p.v_dtype);
    l.dh = w.part({p.B, p.NT, p.HV, p.K, p.V}, p.q_dtype);
    l.dv2 = w.part({p.B, p.T, p.HV, p.V}, p.v_dtype);
    l.dw = w.part({p.B, p.T, p.HV, p.K}, p.k_dtype);
    l.dG = w.part({p.B, p.T, p.HV}, DType::fp32);
    l.dG2 = w.part({p.B, p.T, p.HV}, DType::fp32);
    l.dk2 = w.part({p.B, p.T, p.H, p.K}, p.k_dtype);
    if (p.l2norm) {
      l.dqn = w.part({p.B, p.T, p.H, p.K}, p.q_dtype);
      l.dkn = w.part({p.B, p.T, p.H, p.K}, p.k_dtype);
    }
  }
  l.total = w.at;
  return l;
}

namespace {
// The traits of training::GdnComposed (the shared entry, common/gdn_composed.h).
struct GdnOp {
  using Args = ChunkGatedDeltaRuleArgs;
  using BwdArgs = ChunkGatedDeltaRuleBwdArgs;
  using BwdOut = ChunkGatedDeltaRuleBwdOut;
  using Params = chunk_gated_delta_rule_ns::Params;
  static constexpr const char* kOp = chunk_gated_delta_rule_ns::kOp;
  static constexpr const char* kBwd = chunk_gated_delta_rule_ns::kBwd;
  static constexpr bool kGatePerChannel = false;
  static constexpr int kMinChunk = 16;
  [[maybe_unused]] static constexpr const char* kChunkNote = "";  // kMinChunk 16: not said
  static const std::vector<core::Impl<Params>>& impls() {
    return chunk_gated_delta_rule_ns::impls();
  }
  static Status run_cpu(const Params& p, const Context& ctx) {
    return chunk_gated_delta_rule_ns::run_cpu(p, ctx);
  }
  static size_t workspace_total(const Params& p) { return workspace_layout(p).total; }
};
using ComposedEntry = training::GdnComposed<GdnOp>;
}  // namespace
}  // namespace recops::ops::chunk_gated_delta_rule_ns

namespace recops {
using ops::chunk_gated_delta_rule_ns::ComposedEntry;

Status chunk_gated_delta_rule_shape(const ChunkGatedDeltaRuleArgs& a, Shape* o_shape,
                                    DType* o_dtype, Shape* final_state_shape) {
  return ComposedEntry::shape(a, o_shape, o_dtype, final_state_shape);
}

size_t chunk_gated_delta_rule_workspace_bytes(const ChunkGatedDeltaRuleArgs& a) {
  return ComposedEntry::workspace_bytes(a);
}

Status chunk_gated_delta_rule(const ChunkGatedDeltaRuleArgs& a, const TensorView& o,
                              const TensorView* final_state, const Context& ctx) {
  return ComposedEntry::forward(a, o, final_state, ctx);
}

Status chunk_gated_delta_rule_plain(const ChunkGatedDeltaRuleArgs& a, const TensorView& o,
                                    const TensorView* final_state) {
  return ComposedEntry::plain(a, o, final_state);
}

Status chunk_gated_delta_rule_bwd_check(const ChunkGatedDeltaRuleBwdArgs& a, bool* has_dh0) {
  return ComposedEntry::bwd_check(a, has_dh0);
}

size_t chunk_gated_delta_rule_bwd_workspace_bytes(const ChunkGatedDeltaRuleBwdArgs& a) {
  return ComposedEntry::bwd_workspace_bytes(a);
}

Status chunk_gated_delta_rule_bwd(const ChunkGatedDeltaRuleBwdArgs& a,
                                  const ChunkGatedDeltaRuleBwdOut& out, const Context& ctx) {
  return ComposedEntry::backward(a, out, ctx);
}

Status chunk_gated_delta_rule_bwd_plain(const ChunkGatedDeltaRuleBwdArgs& a,
                                        const ChunkGatedDeltaRuleBwdOut& out) {
  return ComposedEntry::bwd_plain(a, out);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (training::GdnComposed::register_ops) ----
namespace recops::ops::chunk_gated_delta_rule_ns {
namespace {
constexpr const char* kDoc =
    R"(The chunked Gated DeltaNet (fla-core's
``fla.ops.gated_delta_rule.chunk.chunk_gated_delta_rule``), forward.

Per sequence and value head hv (key head ``hv // (HV // H)``), with the state S ``[K, V]``
starting at initial_state (or 0), token by token::

    S = exp(g[t]) * S
    S = S + beta[t] * outer(k[t], v[t] - S^T k[t])
    o[t] = scale * S^T q[t]

and final_state is S after the sequence's last token. It is computed in chunks of ``chunk_size``
positions by the GDN sub-ops chunk_local_cumsum, chunk_scaled_dot_kkt, solve_tril,
recompute_w_u_fwd, chunk_gated_delta_rule_fwd_h and chunk_fwd_o; the intermediates w, u, h and
v_new are stored in the input dtype, the state in fp32.

Args:
    q: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    k: ``[B, T, H, K]``, q's dtype.
    v: ``[B, T, HV, V]``, q's dtype, HV a multiple of H.
    g: ``[B, T, HV]``: the raw log decays, natural-log units (normally <= 0; not a cumsum).
    beta: ``[B, T, HV]``.
    scale: default ``K ** -0.5``.
    initial_state: optional ``[N, HV, K, V]`` (fp32; any float dtype is read).
    output_final_state: also return final_state.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    use_qk_l2norm_in_kernel: l2-normalise the rows of q and k first (eps 1e-6 added to the sum
        of squares).
    chunk_size: 16, 32 or 64.

Returns:
    ``(o, final_state)``: o ``[B, T, HV, V]`` in v's dtype; final_state ``[N, HV, K, V]`` fp32,
    or an empty ``[0]`` tensor when output_final_state is False (fla returns None; the kit has no
    optional outputs).

Differentiable in q, k, v, g, beta and initial_state (the op ``chunk_gated_delta_rule_bwd``,
which recomputes the forward's intermediates and runs the GDN backward sub-ops). Double backward
raises.
)";
}  // namespace
}  // namespace recops::ops::chunk_gated_delta_rule_ns

RECOPS_REGISTER_OPS(reg) {
  recops::ops::chunk_gated_delta_rule_ns::ComposedEntry::register_ops(
      reg, recops::ops::chunk_gated_delta_rule_ns::kDoc);
}
