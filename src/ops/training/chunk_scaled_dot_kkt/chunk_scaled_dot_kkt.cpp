// training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.cpp: the entry of chunk_scaled_dot_kkt. All
// validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts (cuda_sm80 in CUDA builds, cpu_generic, reference). At the end: the
// OpInfo and the argument table (forward only).
#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/chunk_scaled_dot_kkt/impls.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_scaled_dot_kkt_ns {
namespace {
constexpr const char* kOp = "chunk_scaled_dot_kkt";
constexpr training::GdnEntry kEntry{kOp, "k"};
using training::is_float;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// `name` ([B, T, HV], floating, contiguous, on k's device).
Status check_head_tensor(const char* name, const TensorView& t, const TensorView& k, int64_t B,
                         int64_t T, int64_t HV) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "k", k, name, t));
  RECOPS_CHECK(t.ndim == 3 && is_float(t.dtype), kOp, ": ", name,
               " must be [B, T, HV] of fp64, fp32, fp16 or bf16; got ", describe(t));
  RECOPS_CHECK(t.sizes[0] == B && t.sizes[1] == T && (HV < 0 || t.sizes[2] == HV), kOp, ": ", name,
               " must be [B, T, HV] = ", shape_str({B, T, HV < 0 ? t.sizes[2] : HV}),
               " (B, T of k; HV of beta); got ", describe(t));
  RECOPS_CHECK(t.is_contiguous(), kOp, ": ", name, " must be contiguous; got ", describe(t));
  return Status::Ok();
}

// Every rule on the arguments; *p gets the sizes, pointers and scalars. ctx: the call's context,
// or nullptr in the shape function (no data read: offsets values are checked by the run).
Status check_args(const ChunkScaledDotKktArgs& a, const Context* ctx, Params* p) {
  const TensorView& k = a.k;
  RECOPS_RETURN_IF_ERROR(kEntry.lead(k, "[B, T, H, K]"));
  const int64_t B = k.sizes[0], T = k.sizes[1], H = k.sizes[2], K = k.sizes[3];
  RECOPS_RETURN_IF_ERROR(check_head_tensor("beta", a.beta, k, B, T, -1));
  const int64_t HV = a.beta.sizes[2];
  RECOPS_RETURN_IF_ERROR(kEntry.gva("beta", HV, H));
  if (a.g) RECOPS_RETURN_IF_ERROR(check_head_tensor("g", *a.g, k, B, T, HV));
  const int64_t bt = a.chunk_size;
  RECOPS_RETURN_IF_ERROR(kEntry.chunk_size(bt));
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, k, B, T, ctx, &N, p));
  p->k = k.data;
  p->beta = a.beta.data;
  p->g = a.g ? a.g->data : nullptr;
  p->k_dtype = k.dtype;
  p->beta_dtype = a.beta.dtype;
  p->g_dtype = a.g ? a.g->dtype : DType::fp32;
  p->B = B, p->T = T, p->H = H, p->HV = HV, p->K = K;
  p->BT = bt;
  p->N = N;
  p->gate_log2 = a.gate_log2;
  p->device_index = k.device.index;
  return Status::Ok();
}

Status check_out(const Params& p, const TensorView& k, const TensorView& A) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "k", k, "A", A));
  const Shape want{p.B, p.T, p.HV, p.BT};
  RECOPS_CHECK(A.shape() == want && A.dtype == DType::fp32 && A.is_contiguous(), kOp,
               ": A must be contiguous fp32", shape_str(want), " ([B, T, HV, chunk_size]); got ",
               describe(A));
  return Status::Ok();
}

Status prepare(const ChunkScaledDotKktArgs& a, const TensorView& A, const Context& ctx, Params* p) {
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, p));
  RECOPS_RETURN_IF_ERROR(check_out(*p, a.k, A));
  p->A = static_cast<float*>(A.data);
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::chunk_scaled_dot_kkt_ns

namespace recops {

Status chunk_scaled_dot_kkt_shape(const ChunkScaledDotKktArgs& a, Shape* out_shape) {
  using namespace ops::chunk_scaled_dot_kkt_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  *out_shape = {p.B, p.T, p.HV, p.BT};
  return Status::Ok();
}

Status chunk_scaled_dot_kkt(const ChunkScaledDotKktArgs& a, const TensorView& A,
                            const Context& ctx) {
  using namespace ops::chunk_scaled_dot_kkt_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, A, ctx, &p));
  if (ops::training::any_zero({p.B, p.T, p.HV})) return Status::Ok();  // empty: nothing to run
  return core::dispatch(kOp, impls(), a.k.device.type, p, ctx);
}

Status chunk_scaled_dot_kkt_plain(const ChunkScaledDotKktArgs& a, const TensorView& A) {
  using namespace ops::chunk_scaled_dot_kkt_ns;
  RECOPS_CHECK(a.k.device.is_cpu(), "chunk_scaled_dot_kkt_plain: CPU tensors only");
  const Context ctx;
  Params p;
  RECOPS_RETURN_IF_ERROR(prepare(a, A, ctx, &p));
  p.plain = true;
  if (ops::training::any_zero({p.B, p.T, p.HV})) return Status::Ok();
  return run_reference(p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::chunk_scaled_dot_kkt_ns {
namespace {
Status shapes(const ChunkScaledDotKktArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(chunk_scaled_dot_kkt_shape(a, &s));
  outs->push_back({s, DType::fp32});
  return Status::Ok();
}

constexpr const char* kDoc =
    R"(The GDN chunk matrix ``A = beta * (k k^T) * Gamma``, strictly lower triangular per chunk
(fla-core's ``fla.ops.common.chunk_scaled_dot_kkt.chunk_scaled_dot_kkt_fwd``).

Each sequence is cut into chunks of ``chunk_size`` positions from its own start (the last one
may be shorter). For position t of a chunk starting at c0 and value head hv (key head
``hv // (HV // H)``), column j of ``A[t, hv]`` is
``beta[t, hv] * dot(k[t, h], k[c0 + j, h]) * exp(g[t, hv] - g[c0 + j, hv])`` for
``c0 + j < t`` and 0 otherwise (``exp2`` with ``gate_log2``; no factor without ``g``). The CPU
forms the dots in fp32 (fp64 for fp64 k).

Args:
    k: ``[B, T, H, K]``, fp64, fp32, fp16 or bf16.
    beta: ``[B, T, HV]``, HV a multiple of H.
    g: optional ``[B, T, HV]``: G, the chunk-local cumsum of the log gates (e.g. from
        ``chunk_local_cumsum`` with the same chunk_size), natural-log units (log2 with gate_log2).
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1;
        chunks restart at each sequence start; zero-length sequences are allowed.
    chunk_size: 16, 32 or 64.
    gate_log2: g is in log2 units.

Returns:
    A: ``[B, T, HV, chunk_size]`` fp32.

Forward only (inputs that require grad raise): fla uses this op inside the GDN forward, and the
gradient through A is formed by the wy_fast backward (prepare_wy_repr_bwd).
)";
}  // namespace
}  // namespace recops::ops::chunk_scaled_dot_kkt_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::chunk_scaled_dot_kkt_ns;
  using A = ChunkScaledDotKktArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::k>("k", {.dense_from = 0})
              .arg<&A::beta>("beta", {.dense_from = 0})
              .arg<&A::g>("g", {.def = "None", .dense_from = 0})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::chunk_size>("chunk_size", {.def = "64"})
              .arg<&A::gate_log2>("gate_log2", {.def = "False"})
              .out("A")
              .shapes(shapes)
              .run_one<&chunk_scaled_dot_kkt>()
              .forward_only()
              .doc("", kDoc));
}
