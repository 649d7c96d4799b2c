// training/chunk_kda/chunk_kda.cpp: the entry of chunk_kda and chunk_kda_bwd. All validation
// happens here, once, in training::GdnComposed (common/gdn_composed.h, shared with
// chunk_gated_delta_rule; g [B, T, HV, K], chunk_size 32 or 64; the sub-ops the CPU path calls
// check their own arguments again); then the ordered implementation list runs the first
// implementation that accepts (cpu_generic, reference; no CUDA path yet: the gk options of
// fwd_h, fwd_o and bwd_dhu are CPU-only; the KDA sub-ops have cuda_sm80 paths). Here: the list,
// the workspace's layout, the C++ API and the registration (the forward with
// .backward(chunk_kda_bwd), and the backward).
#include "ops/training/chunk_kda/chunk_kda.h"

#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_kda/impls.h"
#include "ops/training/common/gdn_composed.h"

namespace recops::ops::chunk_kda_ns {
namespace {
constexpr const char* kOp = "chunk_kda";
constexpr const char* kBwd = "chunk_kda_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list = core::with_cpu_impls<Params>({}, run_cpu, run_reference);
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
  l.G = w.part({p.B, p.T, p.HV, p.K}, DType::fp32);
  l.w = w.part({p.B, p.T, p.HV, p.K}, p.k_dtype);
  l.u = w.part({p.B, p.T, p.HV, p.V}, p.v_dtype);
  l.qg = w.part({p.B, p.T, p.HV, p.K}, p.q_dtype);
  l.kg = w.part({p.B, p.T, p.HV, p.K}, p.k_dtype);
  l.Aqk = w.part({p.B, p.T, p.HV, p.BT}, p.k_dtype);
  l.Akk = w.part({p.B, p.T, p.HV, p.BT}, DType::fp32);
  l.h = w.part({p.B, p.NT, p.HV, p.K, p.V}, p.k_dtype);
  l.v_new = w.part({p.B, p.T, p.HV, p.V}, p.v_dtype);
  if (p.bwd) {
    l.dAqk = w.part({p.B, p.T, p.HV, p.BT}, DType::fp32);
    l.dv_local = w.part({p.B, p.T, p.HV, p.V}, p.v_dtype);
    l.dh = w.part({p.B, p.NT, p.HV, p.K, p.V}, p.q_dtype);
    l.dv2 = w.part({p.B, p.T, p.HV, p.V}, p.v_dtype);
    l.dq1 = w.part({p.B, p.T, p.H, p.K}, DType::fp32);
    l.dk1 = w.part({p.B, p.T, p.H, p.K}, DType::fp32);
    l.dbeta1 = w.part({p.B, p.T, p.HV}, DType::fp32);
    l.dG1 = w.part({p.B, p.T, p.HV, p.K}, DType::fp32);
    l.dAkk = w.part({p.B, p.T, p.HV, p.BT}, DType::fp32);
    l.dq2 = w.part({p.B, p.T, p.H, p.K}, DType::fp32);
    l.dk2 = w.part({p.B, p.T, p.H, p.K}, DType::fp32);
    l.dbeta2 = w.part({p.B, p.T, p.HV}, DType::fp32);
    l.dG2 = w.part({p.B, p.T, p.HV, p.K}, DType::fp32);
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
struct KdaOp {
  using Args = ChunkKdaArgs;
  using BwdArgs = ChunkKdaBwdArgs;
  using BwdOut = ChunkKdaBwdOut;
  using Params = chunk_kda_ns::Params;
  static constexpr const char* kOp = chunk_kda_ns::kOp;
  static constexpr const char* kBwd = chunk_kda_ns::kBwd;
  static constexpr bool kGatePerChannel = true;
  static constexpr int kMinChunk = 32;
  static constexpr const char* kChunkNote = " (chunk_kda_fwd_intra's chunk sizes)";
  static const std::vector<core::Impl<Params>>& impls() { return chunk_kda_ns::impls(); }
  static Status run_cpu(const Params& p, const Context& ctx) {
    return chunk_kda_ns::run_cpu(p, ctx);
  }
  static size_t workspace_total(const Params& p) { return workspace_layout(p).total; }
};
using ComposedEntry = training::GdnComposed<KdaOp>;
}  // namespace
}  // namespace recops::ops::chunk_kda_ns

namespace recops {
using ops::chunk_kda_ns::ComposedEntry;

Status chunk_kda_shape(const ChunkKdaArgs& a, Shape* o_shape, DType* o_dtype,
                       Shape* final_state_shape) {
  return ComposedEntry::shape(a, o_shape, o_dtype, final_state_shape);
}

size_t chunk_kda_workspace_bytes(const ChunkKdaArgs& a) {
  return ComposedEntry::workspace_bytes(a);
}

Status chunk_kda(const ChunkKdaArgs& a, const TensorView& o, const TensorView* final_state,
                 const Context& ctx) {
  return ComposedEntry::forward(a, o, final_state, ctx);
}

Status chunk_kda_plain(const ChunkKdaArgs& a, const TensorView& o, const TensorView* final_state) {
  return ComposedEntry::plain(a, o, final_state);
}

Status chunk_kda_bwd_check(const ChunkKdaBwdArgs& a, bool* has_dh0) {
  return ComposedEntry::bwd_check(a, has_dh0);
}

size_t chunk_kda_bwd_workspace_bytes(const ChunkKdaBwdArgs& a) {
  return ComposedEntry::bwd_workspace_bytes(a);
}

Status chunk_kda_bwd(const ChunkKdaBwdArgs& a, const ChunkKdaBwdOut& out, const Context& ctx) {
  return ComposedEntry::backward(a, out, ctx);
}

Status chunk_kda_bwd_plain(const ChunkKdaBwdArgs& a, const ChunkKdaBwdOut& out) {
  return ComposedEntry::bwd_plain(a, out);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (training::GdnComposed::register_ops) ----
namespace recops::ops::chunk_kda_ns {
namespace {
constexpr const char* kDoc =
    R"(The chunked Kimi Delta Attention (fla-core's ``fla.ops.kda.chunk.chunk_kda``), forward.

Per sequence and value head hv (key head ``hv // (HV // H)``), with the state S ``[K, V]``
starting at initial_state (or 0), token by token::

    S = exp(g[t])[:, None] * S          (a per-channel decay of S's K rows)
    S = S + beta[t] * outer(k[t], v[t] - S^T k[t])
    o[t] = scale * S^T q[t]

and final_state is S after the sequence's last token. It is computed in chunks of ``chunk_size``
positions by the sub-ops chunk_local_cumsum, chunk_kda_fwd_intra, chunk_gated_delta_rule_fwd_h
(with ``gk``) and chunk_fwd_o (with ``gk``); the intermediates w, u, qg, kg, Aqk, h and v_new are
stored in the input dtype, Akk and the state in fp32. CPU only for now.

Args:
    q: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    k: ``[B, T, H, K]``, q's dtype.
    v: ``[B, T, HV, V]``, q's dtype, HV a multiple of H.
    g: ``[B, T, HV, K]``: the raw per-channel log decays, natural-log units (normally <= 0; not a
        cumsum; fla's ``use_gate_in_kernel`` activation is not applied).
    beta: ``[B, T, HV]``.
    scale: default ``K ** -0.5``.
    initial_state: optional ``[N, HV, K, V]`` (fp32; any float dtype is read).
    output_final_state: also return final_state.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    use_qk_l2norm_in_kernel: l2-normalise the rows of q and k first (eps 1e-6 added to the sum
        of squares).
    chunk_size: 32 or 64.

Returns:
    ``(o, final_state)``: o ``[B, T, HV, V]`` in v's dtype; final_state ``[N, HV, K, V]`` fp32,
    or an empty ``[0]`` tensor when output_final_state is False.

Differentiable in q, k, v, g, beta and initial_state (the op ``chunk_kda_bwd``, which recomputes
the forward's intermediates and runs the KDA backward sub-ops). Double backward raises.
)";
}  // namespace
}  // namespace recops::ops::chunk_kda_ns

RECOPS_REGISTER_OPS(reg) {
  recops::ops::chunk_kda_ns::ComposedEntry::register_ops(reg, recops::ops::chunk_kda_ns::kDoc);
}
