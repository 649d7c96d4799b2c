// jagged/multi_head_jagged_flash_attention/multi_head_jagged_flash_attention.cpp: the entry. All
// validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts. At the end: the OpInfos and the argument tables.
#include "ops/jagged/multi_head_jagged_flash_attention/multi_head_jagged_flash_attention.h"

#include <cstdint>
#include <string>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/flash_entry.h"
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/launch.h"
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/tiles.h"
#include "ops/jagged/multi_head_jagged_flash_attention/impls.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {
namespace {
constexpr const char* kOp = "multi_head_jagged_flash_attention";
constexpr const char* kFwd = "multi_head_jagged_flash_attention_fwd";
constexpr const char* kBwd = "multi_head_jagged_flash_attention_bwd";

#ifdef RECOPS_WITH_CUDA
// cuda_sm80 holds a row in registers (D <= 256) and is compiled for fp32, fp16 and bf16
// (jagged_ops.md §1.3: fp64 attention is CPU-only).
std::string cuda_accepts(const Params& p) {
  if (p.dtype == DType::fp64)
    return "q is fp64: the CUDA kernels take fp32, fp16 or bf16 (fp64 runs on the CPU)";
  if (p.D > 256)
    return "D=" + std::to_string(p.D) + " > 256: the CUDA kernels take D <= 256 (q.size(2))";
  return core::cuda_capability_at_least<80, Params>(p);
}

bool aligned16(const void* ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
}
bool rows_aligned16(const HeadRows& t) {
  return aligned16(t.data) && t.hs % 8 == 0 && t.rs % 8 == 0;
}

// cuda_sm80_mma: fp16 / bf16, 8 <= D <= 128 with D % 8 == 0, every row of every operand starting
// 16-byte aligned (its copies and stores move 16 bytes).
std::string mma_accepts(const Params& p) {
  if (p.dtype != DType::fp16 && p.dtype != DType::bf16)
    return "cuda_sm80_mma runs fp16 and bf16 (q is " + std::string(dtype_name(p.dtype)) +
           "; cuda_sm80 runs fp32)";
  if (p.D % 8 != 0 || p.D < 8 || p.D > kMmaMaxD)
    return "cuda_sm80_mma needs D a multiple of 8 in [8, " + std::to_string(kMmaMaxD) +
           "] (got D=" + std::to_string(p.D) + "); cuda_sm80 runs the rest";
  bool al = rows_aligned16(p.q) && rows_aligned16(p.k) && rows_aligned16(p.v);
  if (p.backward)
    al = al && rows_aligned16(p.grad) && rows_aligned16(p.o) && aligned16(p.dq) &&
         aligned16(p.dk) && aligned16(p.dv);
  else
    al = al && aligned16(p.out);
  if (!al) return "cuda_sm80_mma needs 16-byte aligned rows of every operand; cuda_sm80 runs this";
  return cuda_accepts(p);
}
#endif

const std::vector<core::Impl<Params>>& impls() {
  static const auto list = [] {
    auto l = jagged_flash::impls<Params>(RECOPS_IF_CUDA(run_cuda), RECOPS_IF_CUDA(cuda_accepts),
                                         run_cpu, run_reference, run_cpu_avx2);
#ifdef RECOPS_WITH_CUDA
    l.insert(l.begin(),
             core::Impl<Params>{"cuda_sm80_mma", DeviceType::cuda, core::cuda::any_device_reason,
                                mma_accepts, run_cuda_mma, mma_fwd_candidates});
#endif
    return l;
  }();
  return list;
}

// A [H, total_L, D] operand: floating, 3-D, last stride 1; like `ref` when given.
Status check_3d(const char* op, const char* name, const TensorView& t, const char* ref_name,
                const TensorView* ref) {
  RECOPS_CHECK(jagged_flash::floating(t.dtype), op, ": ", name,
               " must be fp64, fp32, fp16 or bf16, got ", dtype_name(t.dtype));
  RECOPS_CHECK(t.ndim == 3, op, ": ", name, " must be [H, total_L, D], got ", describe(t));
  RECOPS_CHECK(t.inner_contiguous(2), op, ": ", name, "'s last dim must have stride 1; got ",
               describe(t));
  if (ref) {
    RECOPS_CHECK(t.shape() == ref->shape() && t.dtype == ref->dtype, op, ": ", name, " ",
                 describe(t), " must have ", ref_name, "'s shape and dtype (", describe(*ref), ")");
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, ref_name, *ref, name, t));
  }
  return Status::Ok();
}

Status check_inputs(const char* op, const TensorView& q, const TensorView& k, const TensorView& v,
                    const TensorView& seq_offsets, int64_t max_seq_len) {
  RECOPS_RETURN_IF_ERROR(check_3d(op, "q", q, "", nullptr));
  RECOPS_RETURN_IF_ERROR(check_3d(op, "k", k, "q", &q));
  RECOPS_RETURN_IF_ERROR(check_3d(op, "v", v, "q", &q));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "seq_offsets", seq_offsets));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", q, "seq_offsets", seq_offsets));
  RECOPS_CHECK(max_seq_len >= 0, op, ": max_seq_len=", max_seq_len, " must be >= 0");
  return Status::Ok();
}

HeadRows rows_of(const TensorView& t) {
  return {t.data, t.strides[0], t.strides[1]};
}

Params base_params(const TensorView& q, const TensorView& k, const TensorView& v,
                   const TensorView& seq_offsets, int64_t max_seq_len) {
  Params p;
  p.q = rows_of(q);
  p.k = rows_of(k);
  p.v = rows_of(v);
  p.dtype = q.dtype;
  p.seq_offsets = seq_offsets.data;
  p.offsets_int64 = seq_offsets.dtype == DType::int64;
  p.offsets_stride = seq_offsets.strides[0];
  p.B = seq_offsets.sizes[0] - 1;
  p.H = q.sizes[0];
  p.total_L = q.sizes[1];
  p.D = q.sizes[2];
  p.max_L = max_seq_len;
  p.device_index = q.device.index;
  return p;
}

// D = 0 still runs when lse is written (log n_b). `writes`: some output has an element; without
// one nothing runs (an empty q may carry a huge H, which the CPU plan would walk head by head:
// found by fuzz_jagged_entries, an out-of-memory at H ~ 2^30 with D = 0).
Status run(const char* op, const Params& p, const TensorView& seq_offsets, DeviceType dev,
           const Context& ctx, bool writes) {
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, "seq_offsets", seq_offsets, p.total_L,
                                                "q.size(1) (total_L)", ctx));
  if (!writes || p.H == 0 || p.total_L == 0) return Status::Ok();  // nothing to launch
  return core::dispatch(op, impls(), dev, p, ctx);
}

Status forward(const char* op, const MultiHeadJaggedFlashAttentionArgs& a, const TensorView& out,
               const TensorView* lse, const Context& ctx, bool plain) {
  RECOPS_RETURN_IF_ERROR(check_inputs(op, a.q, a.k, a.v, a.seq_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(jagged_flash::check_out(op, "out", out, a.q.shape(), a.q.dtype, a.q));
  if (lse)
    RECOPS_RETURN_IF_ERROR(
        jagged_flash::check_out(op, "lse", *lse, {a.q.sizes[0], a.q.sizes[1]}, DType::fp32, a.q));
  Params p = base_params(a.q, a.k, a.v, a.seq_offsets, a.max_seq_len);
  p.out = out.data;
  p.lse = lse ? static_cast<float*>(lse->data) : nullptr;
  if (plain) {
    RECOPS_CHECK(a.q.device.is_cpu(), op, ": the plain baseline runs on CPU tensors only");
    p.plain = true;
    if (p.H == 0 || p.total_L == 0) return Status::Ok();
    return run_reference(p, {});
  }
  return run(op, p, a.seq_offsets, a.q.device.type, ctx,
             out.numel() > 0 || (lse != nullptr && lse->numel() > 0));
}

Status backward(const MultiHeadJaggedFlashAttentionBwdArgs& a, const TensorView& dq,
                const TensorView& dk, const TensorView& dv, const Context& ctx, bool plain) {
  const char* op = kBwd;
  RECOPS_RETURN_IF_ERROR(check_inputs(op, a.q, a.k, a.v, a.seq_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(check_3d(op, "grad", a.grad, "q", &a.q));
  RECOPS_RETURN_IF_ERROR(check_3d(op, "out", a.out, "q", &a.q));
  const Shape lse_shape = {a.q.sizes[0], a.q.sizes[1]};
  RECOPS_CHECK(
      a.lse.dtype == DType::fp32 && a.lse.shape() == lse_shape && a.lse.inner_contiguous(1), op,
      ": lse must be fp32 ", shape_str(lse_shape), " with last stride 1; got ", describe(a.lse));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", a.q, "lse", a.lse));
  RECOPS_RETURN_IF_ERROR(jagged_flash::check_out(op, "dq", dq, a.q.shape(), a.q.dtype, a.q));
  RECOPS_RETURN_IF_ERROR(jagged_flash::check_out(op, "dk", dk, a.q.shape(), a.q.dtype, a.q));
  RECOPS_RETURN_IF_ERROR(jagged_flash::check_out(op, "dv", dv, a.q.shape(), a.q.dtype, a.q));
  Params p = base_params(a.q, a.k, a.v, a.seq_offsets, a.max_seq_len);
  p.backward = true;
  p.grad = rows_of(a.grad);
  p.o = rows_of(a.out);
  p.lse_in = static_cast<const float*>(a.lse.data);
  p.lse_hs = a.lse.strides[0];
  p.dq = dq.data;
  p.dk = dk.data;
  p.dv = dv.data;
  if (plain) {
    RECOPS_CHECK(a.q.device.is_cpu(), op, ": the plain baseline runs on CPU tensors only");
    p.plain = true;
    if (p.H == 0 || p.total_L == 0) return Status::Ok();
    return run_reference(p, {});
  }
  return run(op, p, a.seq_offsets, a.q.device.type, ctx, dq.numel() > 0);  // dk, dv: dq's shape
}
}  // namespace
}  // namespace recops::ops::multi_head_jagged_flash_attention_ns

namespace recops {

Status multi_head_jagged_flash_attention_shape(const MultiHeadJaggedFlashAttentionArgs& a,
                                               Shape* out_shape) {
  using namespace ops::multi_head_jagged_flash_attention_ns;
  RECOPS_RETURN_IF_ERROR(check_inputs(kOp, a.q, a.k, a.v, a.seq_offsets, a.max_seq_len));
  *out_shape = a.q.shape();
  return Status::Ok();
}

Status multi_head_jagged_flash_attention(const MultiHeadJaggedFlashAttentionArgs& a,
                                         const TensorView& out, const Context& ctx) {
  return ops::multi_head_jagged_flash_attention_ns::forward(
      ops::multi_head_jagged_flash_attention_ns::kOp, a, out, nullptr, ctx, false);
}

Status multi_head_jagged_flash_attention_fwd(const MultiHeadJaggedFlashAttentionArgs& a,
                                             const TensorView& out, const TensorView& lse,
                                             const Context& ctx) {
  return ops::multi_head_jagged_flash_attention_ns::forward(
      ops::multi_head_jagged_flash_attention_ns::kFwd, a, out, &lse, ctx, false);
}

Status multi_head_jagged_flash_attention_bwd(const MultiHeadJaggedFlashAttentionBwdArgs& a,
                                             const TensorView& dq, const TensorView& dk,
                                             const TensorView& dv, const Context& ctx) {
  return ops::multi_head_jagged_flash_attention_ns::backward(a, dq, dk, dv, ctx, false);
}

Status multi_head_jagged_flash_attention_fwd_plain(const MultiHeadJaggedFlashAttentionArgs& a,
                                                   const TensorView& out, const TensorView& lse) {
  return ops::multi_head_jagged_flash_attention_ns::forward(
      ops::multi_head_jagged_flash_attention_ns::kFwd, a, out, &lse, {}, true);
}

Status multi_head_jagged_flash_attention_bwd_plain(const MultiHeadJaggedFlashAttentionBwdArgs& a,
                                                   const TensorView& dq, const TensorView& dk,
                                                   const TensorView& dv) {
  return ops::multi_head_jagged_flash_attention_ns::backward(a, dq, dk, dv, {}, true);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::multi_head_jagged_flash_attention_ns {
namespace {
using Args = MultiHeadJaggedFlashAttentionArgs;
using BwdArgs = MultiHeadJaggedFlashAttentionBwdArgs;

Status fwd_shapes(const Args& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_inputs(kFwd, a.q, a.k, a.v, a.seq_offsets, a.max_seq_len));
  outs->push_back({a.q.shape(), a.q.dtype});
  outs->push_back({{a.q.sizes[0], a.q.sizes[1]}, DType::fp32});
  return Status::Ok();
}
Status fwd_run(const Args& a, const kit::Outputs& o, const Context& ctx) {
  return multi_head_jagged_flash_attention_fwd(a, o.views[0], o.views[1], ctx);
}
Status bwd_shapes(const BwdArgs& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_inputs(kBwd, a.q, a.k, a.v, a.seq_offsets, a.max_seq_len));
  for (int i = 0; i < 3; ++i) outs->push_back({a.q.shape(), a.q.dtype});
  return Status::Ok();
}
Status bwd_run(const BwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return multi_head_jagged_flash_attention_bwd(a, o.views[0], o.views[1], o.views[2], ctx);
}

constexpr const char* kDoc =
    R"(Multi-head attention within each jagged sequence, softmax divided by ``max_seq_len``.

Per head h and sequence b, over rows and keys below ``n_b = min(L_b, max_seq_len)``:
``s = q kᵀ`` (no 1/sqrt(D) scale, no mask), ``p = softmax(s) / max_seq_len`` (the running max
over valid keys only), ``out = p v``; rows ``m >= n_b`` of out are 0.

The divisor is the ``max_seq_len`` argument, not the sequence's length: pass the model's
configured bound (a per-batch maximum changes the results). ``max_seq_len = 0`` gives zeros.

Args:
    q, k, v: ``[H, total_L, D]`` (head-major), one dtype: fp64, fp32, fp16 or bf16; last stride 1.
    seq_offsets: ``[B+1]`` int32 or int64 on q's device; ``seq_offsets[0] == 0``,
        non-decreasing, ``seq_offsets[B] == total_L``.
    max_seq_len: ``max_L >= 0``: the truncation bound and the softmax divisor.
    allow_tf32: accepted for SLL compatibility; no implementation uses TF32.

Returns:
    out ``[H, total_L, D]`` in q's dtype (fp32 accumulation for fp32/fp16/bf16).

Differentiable in q, k and v (the op ``multi_head_jagged_flash_attention_bwd``; the backward
recomputes out and lse with ``multi_head_jagged_flash_attention_fwd``). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: q, k, v of different shapes or dtypes, not
    3-D, or not floating; offsets not 1-D int32/int64, not starting at 0, decreasing, or whose
    last element differs from ``q.size(1)``; ``max_seq_len < 0``; tensors on different devices;
    on CUDA, D > 256. On CUDA, offset contents are checked only with validation on.
)";
constexpr const char* kFwdDoc =
    R"(The forward of ``multi_head_jagged_flash_attention`` with its softmax statistics.

Returns:
    (out, lse): out as ``multi_head_jagged_flash_attention``; lse fp32 ``[H, total_L]``,
    ``log Σ_{n < n_b} exp(s[m, n])`` for rows ``m < n_b``, -inf for rows ``m >= n_b``.
)";

template <class A>
kit::Def<A> inputs_table(const char* name, bool grad) {
  return kit::Def<A>(name, "jagged")
      .template arg<&A::q>("q", {.grad = grad, .dense_from = 2})
      .template arg<&A::k>("k", {.grad = grad, .dense_from = 2})
      .template arg<&A::v>("v", {.grad = grad, .dense_from = 2})
      .template arg<&A::seq_offsets>("seq_offsets")
      .template arg<&A::max_seq_len>("max_seq_len", {.sym = true})
      .template arg<&A::allow_tf32>("allow_tf32", {.def = "False"});
}
}  // namespace
}  // namespace recops::ops::multi_head_jagged_flash_attention_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::multi_head_jagged_flash_attention_ns;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kFwd, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  reg.add(inputs_table<Args>(kOp, true)
              .out_like("out", "q")
              .shapes_from<&multi_head_jagged_flash_attention_shape, &Args::q>()
              .run_one<&multi_head_jagged_flash_attention>()
              .backward(kBwd)
              .doc("", kDoc)
              // When a gradient is needed the Autograd kernel runs _fwd and keeps its out and lse
              // for the backward (binding.cpp), which then has no forward to recompute.
              .save_outputs({"out", "lse"}, kFwd));
  reg.add(inputs_table<Args>(kFwd, false)
              .out_like("out", "q", false)
              .out("lse", false)
              .shapes(fwd_shapes)
              .run(fwd_run)
              .doc("", kFwdDoc));
  reg.add(kit::Def<BwdArgs>(kBwd, "jagged")
              .arg<&BwdArgs::grad>("grad", {.dense_from = 2})
              .arg<&BwdArgs::q>("q", {.dense_from = 2})
              .arg<&BwdArgs::k>("k", {.dense_from = 2})
              .arg<&BwdArgs::v>("v", {.dense_from = 2})
              .arg<&BwdArgs::seq_offsets>("seq_offsets")
              .arg<&BwdArgs::out>("out", {.dense_from = 2})
              .arg<&BwdArgs::lse>("lse", {.dense_from = 1})
              .arg<&BwdArgs::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&BwdArgs::allow_tf32>("allow_tf32", {.def = "False"})
              .out_like("dq", "q")
              .out_like("dk", "k")
              .out_like("dv", "v")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
