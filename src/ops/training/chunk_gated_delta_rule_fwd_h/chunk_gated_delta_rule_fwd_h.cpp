// training/chunk_gated_delta_rule_fwd_h/chunk_gated_delta_rule_fwd_h.cpp: the entry of
// chunk_gated_delta_rule_fwd_h. All validation happens here, once; then the ordered implementation
// list runs the first implementation that accepts (cuda_sm80, cpu_generic, reference). At
// the end: the OpInfo and the argument table (forward only).
#include "ops/training/chunk_gated_delta_rule_fwd_h/chunk_gated_delta_rule_fwd_h.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_gated_delta_rule_fwd_h/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns {
namespace {
constexpr const char* kOp = "chunk_gated_delta_rule_fwd_h";
constexpr training::GdnEntry kEntry{kOp, "k"};
using training::is_float;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: the offsets' values and the varlen chunk count
// are checked by the run).
Status check_args(const ChunkGatedDeltaRuleFwdHArgs& a, const Context* ctx, Params* p) {
  const TensorView& k = a.k;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(k, "[B, T, H, K]"));
  const int64_t B = k.sizes[0], T = k.sizes[1], H = k.sizes[2], K = k.sizes[3];
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("w", a.w, k, {B, T, -1, K}, "[B, T, HV, K] (k's B, T, K)"));
  const int64_t HV = a.w.sizes[2];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("w", HV, H));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_tensor("u", a.u, k, {B, T, HV, -1}, "[B, T, HV, V] (w's HV)"));
  const int64_t V = a.u.sizes[3];
  const int64_t bt = a.chunk_size;
  RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
  if (a.g) RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("g", *a.g, k, {B, T, HV}, "[B, T, HV]"));
  // gk: KDA's per-channel gate cumsum at the value heads (g may come with it: both decays apply).
  if (a.gk)
    RECOPS_RETURN_IF_ERROR(
        kEntry.check_tensor("gk", *a.gk, k, {B, T, HV, K}, "[B, T, HV, K] (w's HV, k's K)"));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, k, B, T, ctx, &N, p));
  if (a.initial_state)
    RECOPS_RETURN_IF_ERROR(kEntry.check_tensor("initial_state", *a.initial_state, k, {N, HV, K, V},
                                               "[N, HV, K, V] (N sequences)"));
  // h's NT: ceil(T / BT) per batch row without offsets; with offsets num_chunks, or the sync-free
  // bound ceil(T / BT) + N (§4.2), at least the sequences' chunk count (checked on the values).
  const int64_t dense_nt = ops::training::chunk_count(T, bt);
  int64_t nt = a.seq_offsets ? dense_nt + N : dense_nt;
  if (a.num_chunks) {
    if (!a.seq_offsets)
      RECOPS_CHECK(*a.num_chunks == dense_nt, kOp, ": num_chunks=", *a.num_chunks,
                   " must be ceil(T / chunk_size)=", dense_nt, " without seq_offsets");
    RECOPS_CHECK(*a.num_chunks >= 0, kOp, ": num_chunks=", *a.num_chunks, " must be >= 0");
    nt = *a.num_chunks;
  }
  if (a.seq_offsets && ctx)
    RECOPS_RETURN_IF_ERROR(kEntry.chunk_count(*a.seq_offsets, N, bt, nt, "num_chunks", *ctx));
  p->k = k.data;
  p->w = a.w.data;
  p->u = a.u.data;
  p->g = a.g ? a.g->data : nullptr;
  p->gk = a.gk ? a.gk->data : nullptr;
  p->h0 = a.initial_state ? a.initial_state->data : nullptr;
  p->k_dtype = k.dtype, p->w_dtype = a.w.dtype, p->u_dtype = a.u.dtype;
  p->g_dtype = a.g ? a.g->dtype : DType::fp32;
  p->gk_dtype = a.gk ? a.gk->dtype : DType::fp32;
  p->h0_dtype = a.initial_state ? a.initial_state->dtype : DType::fp32;
  p->h_dtype = a.fp32_chunk_states ? DType::fp32 : k.dtype;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K, p->V = V;
  p->NT = nt;
  p->BT = bt;
  p->N = N;
  p->gate_log2 = a.gate_log2;
  p->device_index = k.device.index;
  return Status::Ok();
}

Status prepare(const ChunkGatedDeltaRuleFwdHArgs& a, const TensorView& h, const TensorView& v_new,
               const TensorView* ht, const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(kEntry.check_out("h", h, a.k, {p->B, p->NT, p->HV, p->K, p->V}, p->h_dtype,
                                          "([B, NT, HV, K, V]) of"));
  RECOPS_RETURN_IF_ERROR(
      kEntry.check_out("v_new", v_new, a.k, a.u.shape(), a.u.dtype, "(u's [B, T, HV, V]) of"));
  RECOPS_CHECK(a.output_final_state == (ht != nullptr), kOp,
               ": final_state must be given exactly when output_final_state is true");
  if (ht)
    RECOPS_RETURN_IF_ERROR(kEntry.check_out("final_state", *ht, a.k, {p->N, p->HV, p->K, p->V},
                                            DType::fp32, "([N, HV, K, V]) of"));
  p->h = h.data;
  p->v_new = v_new.data;
  p->ht = ht ? ht->data : nullptr;
  return Status::Ok();
}

// Nothing to write: every output has zero elements (K = 0 with V > 0 still gives v_new = u).
bool empty(const Params& p) {
  return training::any_zero({p.B, p.NT, p.HV, p.K, p.V}) &&
         training::any_zero({p.B, p.T, p.HV, p.V}) &&
         (!p.ht || training::any_zero({p.N, p.HV, p.K, p.V}));
}
}  // namespace
}  // namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns

namespace recops {

Status chunk_gated_delta_rule_fwd_h_shape(const ChunkGatedDeltaRuleFwdHArgs& a,
                                          ChunkGatedDeltaRuleFwdHShapes* out) {
  using namespace ops::chunk_gated_delta_rule_fwd_h_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  out->h = {p.B, p.NT, p.HV, p.K, p.V};
  out->h_dtype = p.h_dtype;
  out->v_new = a.u.shape();
  out->v_new_dtype = a.u.dtype;
  out->final_state = a.output_final_state ? Shape{p.N, p.HV, p.K, p.V} : Shape{0};
  return Status::Ok();
}

Status chunk_gated_delta_rule_fwd_h(const ChunkGatedDeltaRuleFwdHArgs& a, const TensorView& h,
                                    const TensorView& v_new, const TensorView* final_state,
                                    const Context& ctx) {
  using namespace ops::chunk_gated_delta_rule_fwd_h_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, h, v_new, final_state, ctx, &p));
  if (empty(p)) return Status::Ok();
  return core::dispatch(kOp, impls(), a.k.device.type, p, ctx);
}

Status chunk_gated_delta_rule_fwd_h_plain(const ChunkGatedDeltaRuleFwdHArgs& a, const TensorView& h,
                                          const TensorView& v_new, const TensorView* final_state) {
  using namespace ops::chunk_gated_delta_rule_fwd_h_ns;
  RECOPS_CHECK(a.k.device.is_cpu(), "chunk_gated_delta_rule_fwd_h_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, h, v_new, final_state, ctx, &p));
  p.plain = true;
  if (empty(p)) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns {
namespace {
Status shapes(const ChunkGatedDeltaRuleFwdHArgs& a, std::vector<kit::OutSpec>* outs) {
  ChunkGatedDeltaRuleFwdHShapes s;
  RECOPS_RETURN_IF_ERROR(chunk_gated_delta_rule_fwd_h_shape(a, &s));
  outs->push_back({s.h, s.h_dtype});
  outs->push_back({s.v_new, s.v_new_dtype});
  outs->push_back({s.final_state, DType::fp32, a.output_final_state});
  return Status::Ok();
}
Status run(const ChunkGatedDeltaRuleFwdHArgs& a, const kit::Outputs& o, const Context& ctx) {
  return chunk_gated_delta_rule_fwd_h(a, o.views[0], o.views[1], o.get(2), ctx);
}

constexpr const char* kDoc =
    R"(The GDN chunk state recurrence (fla-core's
``fla.ops.common.chunk_delta_h.chunk_gated_delta_rule_fwd_h``): the state before each chunk, the
new values u - w S and the final state.

Each sequence is cut into chunks of ``chunk_size`` positions from its own start (the last one may
be shorter). Per sequence and value head hv (key head ``hv // (HV // H)``), with the fp32 state S
``[K, V]`` starting at initial_state (or 0), for the chunks in time order (L the chunk's last
position)::

    h[c, hv] = S
    v_new[t, hv] = u[t, hv] - w[t, hv]^T S                         (t in the chunk)
    S = exp(g[L]) * S + sum_t exp(g[L] - g[t]) * outer(k[t, h], v_new[t, hv])

(``exp2`` with ``gate_log2``; no gate factors without ``g``); final_state is S after the last
chunk. With ``gk`` (KDA's per-channel gate, fla's ``gk``) the state's K rows also decay by their
own factor at the chunk's last position, ``S = exp(gk[L])[:, None] * S`` before the update (with
``g`` too, both decays apply); k gets no per-position factor from gk (KDA passes k already gated,
``kg = k * exp(gk[L] - gk)``).

Chunk numbering of h: without seq_offsets chunk c of batch row b is ``h[b, c]``; with seq_offsets
the chunks of all sequences in order (zero-length sequences own none), as fla's
``prepare_chunk_indices``, and the chunks past the last one are zero.

Args:
    k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    w: ``[B, T, HV, K]``, HV a multiple of H.
    u: ``[B, T, HV, V]``.
    g: optional ``[B, T, HV]``: G, the chunk-local cumsum of the log gates, natural-log units
        (log2 with gate_log2).
    initial_state: optional ``[N, HV, K, V]`` (fp32; any float dtype is read).
    output_final_state: also return final_state.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1.
    chunk_size: 16, 32 or 64.
    gate_log2: g is in log2 units.
    num_chunks: h's NT with seq_offsets (at least the chunk count sum ceil(len_n / chunk_size));
        None: the sync-free bound ``ceil(T / chunk_size) + N``. Without seq_offsets NT is
        ``ceil(T / chunk_size)`` (num_chunks must be None or that).
    fp32_chunk_states: store h in fp32 instead of k's dtype.
    gk: optional ``[B, T, HV, K]``: KDA's per-channel chunk-local gate cumsum (natural-log units;
        log2 with gate_log2). The last argument so that positional calls keep their meaning.
        Served on the CPU and by cuda_sm80.

Returns:
    ``(h, v_new, final_state)``: h ``[B, NT, HV, K, V]`` in k's dtype (fp32 with
    fp32_chunk_states); v_new ``[B, T, HV, V]`` in u's dtype (unscaled by the gates);
    final_state ``[N, HV, K, V]`` fp32, or an empty ``[0]`` tensor when output_final_state is
    False (fla returns None; the kit has no optional outputs). The state is kept in fp32 (fp64
    for fp64 k).

Forward only (inputs that require grad raise): fla's backward of the state recurrence is
chunk_gated_delta_rule_bwd_dhu.
)";
}  // namespace
}  // namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns;
  using A = ChunkGatedDeltaRuleFwdHArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::w>("w", {.dense_from = 0})
              .arg<&A::u>("u", {.dense_from = 0})
              .arg<&A::g>("g", {.def = "None", .dense_from = 0})
              .arg<&A::initial_state>("initial_state", {.def = "None", .dense_from = 0})
              .arg<&A::output_final_state>("output_final_state", {.def = "False"})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .arg<&A::num_chunks>("num_chunks", {.def = "None"})
              .arg<&A::fp32_chunk_states>("fp32_chunk_states", {.def = "False"})
              .arg<&A::gk>("gk", {.def = "None", .dense_from = 0})
              .out("h")
              .out("v_new")
              .out("final_state")
              .shapes(shapes)
              .run(run)
              .forward_only()
              .doc("", kDoc));
}
