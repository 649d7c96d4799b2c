// jagged/jagged_dense_flash_attention/jagged_dense_flash_attention.cpp: the entry. All validation
// happens here, once; then the ordered implementation list runs the first implementation that
// accepts. At the end: the registration (OpInfos and the argument tables of the three ops).
#include "ops/jagged/jagged_dense_flash_attention/jagged_dense_flash_attention.h"

#include <cstdint>
#include <string>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/flash_entry.h"
#include "ops/jagged/jagged_dense_flash_attention/impls.h"

namespace recops::ops::jagged_dense_flash_attention_ns {
namespace {
constexpr const char* kOp = "jagged_dense_flash_attention";
constexpr const char* kFwd = "jagged_dense_flash_attention_fwd";
constexpr const char* kBwd = "jagged_dense_flash_attention_bwd";

#ifdef RECOPS_WITH_CUDA
// cuda_sm80 holds a row in registers: D <= 256 (the CPU paths have no limit).
std::string cuda_accepts(const Params& p) {
  std::string why = core::cuda_capability_at_least<80, Params>(p);
  if (why.empty() && p.D > 256)
    why = "D=" + std::to_string(p.D) + " > 256: the CUDA kernels take D <= 256";
  return why;
}

bool aligned16(const void* ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
}

// cuda_sm80_mma: fp16 / bf16 with D % 8 == 0, 8 <= D <= 256, and rows of q, v and out (backward:
// also grad, dq, dv) starting 16-byte aligned (its copies, loads and stores move 16 bytes); k and
// attn_bias any strides.
std::string mma_accepts(const Params& p) {
  if (p.dtype != DType::fp16 && p.dtype != DType::bf16)
    return "cuda_sm80_mma runs fp16 and bf16 (cuda_sm80 runs fp32 and fp64)";
  if (p.D % 8 != 0 || p.D < 8 || p.D > 256)
    return "cuda_sm80_mma needs D a multiple of 8 in [8, 256] (got D=" + std::to_string(p.D) +
           "); cuda_sm80 runs the rest";
  bool al = aligned16(p.q) && aligned16(p.v) && p.q_row % 8 == 0 && p.v_row % 8 == 0 &&
            aligned16(p.out) && p.out_st % 8 == 0 && p.out_sb % 8 == 0;
  if (p.backward)
    al = al && aligned16(p.grad) && p.grad_st % 8 == 0 && p.grad_sb % 8 == 0 && aligned16(p.dq) &&
         aligned16(p.dv);
  if (!al)
    return "cuda_sm80_mma needs 16-byte aligned rows of q, v, out / grad; cuda_sm80 runs this";
  return cuda_accepts(p);
}
#endif

const std::vector<core::Impl<Params>>& impls() {
  static const auto list = [] {
    auto l = jagged_flash::impls<Params>(RECOPS_IF_CUDA(run_cuda), RECOPS_IF_CUDA(cuda_accepts),
                                         run_cpu, run_reference);
#ifdef RECOPS_WITH_CUDA
    l.insert(l.begin(),
             core::Impl<Params>{"cuda_sm80_mma", DeviceType::cuda, core::cuda::any_device_reason,
                                mma_accepts, run_cuda_mma});
#endif
    return l;
  }();
  return list;
}

// Every check of the forward's arguments; fills the input part of p.
Status check_inputs(const char* op, const JaggedDenseFlashAttentionArgs& a, Params* p) {
  RECOPS_CHECK(jagged_flash::floating(a.q.dtype), op, ": q must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(a.q.dtype));
  RECOPS_CHECK(a.q.ndim == 2, op, ": q must be 2-D [total_L, D], got ", describe(a.q));
  RECOPS_CHECK(a.q.inner_contiguous(1), op, ": q's last dim must have stride 1; got ",
               describe(a.q));
  RECOPS_CHECK(a.v.ndim == 2 && a.v.sizes[0] == a.q.sizes[0] && a.v.sizes[1] == a.q.sizes[1], op,
               ": v must be [total_L, D] like q ", describe(a.q), "; got ", describe(a.v));
  RECOPS_CHECK(a.v.inner_contiguous(1), op, ": v's last dim must have stride 1; got ",
               describe(a.v));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "seq_offsets", a.seq_offsets));
  RECOPS_CHECK(a.max_seq_len >= 0, op, ": max_seq_len=", a.max_seq_len, " must be >= 0");
  const int64_t B = a.seq_offsets.sizes[0] - 1, D = a.q.sizes[1];
  RECOPS_CHECK(a.k.ndim == 3 && a.k.sizes[0] == B && a.k.sizes[1] == D, op,
               ": k must be [B, D, T] with B=", B, " (seq_offsets.numel() - 1) and D=", D,
               " (q.size(1)); got ", describe(a.k));
  const int64_t T = a.k.sizes[2];
  RECOPS_CHECK(a.attn_bias.ndim == 3 && a.attn_bias.sizes[0] == B && a.attn_bias.sizes[2] == T, op,
               ": attn_bias must be [B, S, T] with B=", B, " and T=", T, " (k.size(2)); got ",
               describe(a.attn_bias));
  RECOPS_CHECK(a.attn_bias.sizes[1] >= a.max_seq_len, op,
               ": attn_bias.size(1)=", a.attn_bias.sizes[1],
               " must be >= max_seq_len=", a.max_seq_len);
  const std::pair<const char*, const TensorView*> others[] = {
      {"k", &a.k}, {"v", &a.v}, {"attn_bias", &a.attn_bias}};
  for (const auto& [name, t] : others) {
    RECOPS_CHECK(t->dtype == a.q.dtype, op, ": ", name, " must have q's dtype ",
                 dtype_name(a.q.dtype), ", got ", dtype_name(t->dtype));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", a.q, name, *t));
  }
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", a.q, "seq_offsets", a.seq_offsets));
  p->dtype = a.q.dtype;
  p->q = a.q.data;
  p->k = a.k.data;
  p->v = a.v.data;
  p->bias = a.attn_bias.data;
  p->seq_offsets = a.seq_offsets.data;
  p->offsets_int64 = a.seq_offsets.dtype == DType::int64;
  p->offsets_stride = a.seq_offsets.strides[0];
  p->q_row = a.q.strides[0];
  p->v_row = a.v.strides[0];
  p->k_sb = a.k.strides[0], p->k_sd = a.k.strides[1], p->k_st = a.k.strides[2];
  p->bias_sb = a.attn_bias.strides[0], p->bias_sl = a.attn_bias.strides[1];
  p->bias_st = a.attn_bias.strides[2];
  p->B = B, p->T = T, p->D = D, p->S = a.attn_bias.sizes[1];
  p->total_L = a.q.sizes[0];
  p->max_L = a.max_seq_len;
  p->allow_tf32 = a.allow_tf32;
  p->device_index = a.q.device.index;
  return Status::Ok();
}

Status fwd_checks(const char* op, const JaggedDenseFlashAttentionArgs& a, const TensorView& out,
                  const TensorView* lse, Params* p, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(check_inputs(op, a, p));
  RECOPS_RETURN_IF_ERROR(
      jagged_flash::check_out(op, "out", out, {p->B, p->T, p->D}, a.q.dtype, a.q));
  if (lse)
    RECOPS_RETURN_IF_ERROR(
        jagged_flash::check_out(op, "lse", *lse, {p->B, p->T}, DType::fp32, a.q));
  return core::validate_offsets(op, "seq_offsets", a.seq_offsets, p->total_L, "q.size(0) (total_L)",
                                ctx);
}

Status run(const char* op, const Params& p, bool empty, const Context& ctx, DeviceType dev) {
  if (empty) return Status::Ok();  // nothing to write: no launch of size zero
  return core::dispatch(op, impls(), dev, p, ctx);
}

// Forward with or without lse (the public op writes lse into a scratch of its own: the
// implementations always produce it).
Status forward(const char* op, const JaggedDenseFlashAttentionArgs& a, const TensorView& out,
               const TensorView* lse, const Context& ctx) {
  Params p;
  RECOPS_RETURN_IF_ERROR(fwd_checks(op, a, out, lse, &p, ctx));
  p.out = out.data;
  // An empty out [B, T, 0] may carry a huge T: its batch stride saturates (never used), and the
  // public op has nothing to write, so it keeps no lse of B·T entries (both found by
  // fuzz_jagged_entries: UBSan at T ~ 2^63 with D = 0).
  p.out_sb = TensorView::mul_sat(p.T, p.D), p.out_st = p.D;
  p.lse_sb = p.T, p.lse_st = 1;
  const bool empty = p.B == 0 || p.T == 0;
  if (lse) {
    p.lse = lse->data;
    return run(op, p, empty, ctx, a.q.device.type);
  }
  if (out.numel() == 0) return Status::Ok();
  // The public op: lse goes to the caller's workspace when one is given, else to a host buffer
  // (CPU) or is not kept (CUDA kernels write it only when p.lse is set).
  std::vector<float> host;
  if (a.q.device.type == DeviceType::cpu) {
    host.resize(static_cast<size_t>(p.B * p.T));
    p.lse = host.data();
  }
  return run(op, p, empty, ctx, a.q.device.type);
}
}  // namespace
}  // namespace recops::ops::jagged_dense_flash_attention_ns

namespace recops {

Status jagged_dense_flash_attention_shape(const JaggedDenseFlashAttentionArgs& a,
                                          Shape* out_shape) {
  using namespace ops::jagged_dense_flash_attention_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_inputs(kOp, a, &p));
  *out_shape = {p.B, p.T, p.D};
  return Status::Ok();
}

Status jagged_dense_flash_attention(const JaggedDenseFlashAttentionArgs& a, const TensorView& out,
                                    const Context& ctx) {
  return ops::jagged_dense_flash_attention_ns::forward(ops::jagged_dense_flash_attention_ns::kOp, a,
                                                       out, nullptr, ctx);
}

Status jagged_dense_flash_attention_fwd(const JaggedDenseFlashAttentionArgs& a,
                                        const TensorView& out, const TensorView& lse,
                                        const Context& ctx) {
  return ops::jagged_dense_flash_attention_ns::forward(ops::jagged_dense_flash_attention_ns::kFwd,
                                                       a, out, &lse, ctx);
}

namespace {
using ops::jagged_dense_flash_attention_ns::Params;
Status bwd_checks(const JaggedDenseFlashAttentionBwdArgs& a, const TensorView& dq,
                  const TensorView& dk, const TensorView& dv, const TensorView& dbias, Params* p,
                  const Context& ctx) {
  using namespace ops::jagged_dense_flash_attention_ns;
  const JaggedDenseFlashAttentionArgs f{a.q,           a.k,           a.v,         a.attn_bias,
                                        a.seq_offsets, a.max_seq_len, a.allow_tf32};
  RECOPS_RETURN_IF_ERROR(check_inputs(kBwd, f, p));
  const Shape btd{p->B, p->T, p->D};
  const std::pair<const char*, const TensorView*> btds[] = {{"grad", &a.grad}, {"out", &a.out}};
  for (const auto& [name, t] : btds) {
    RECOPS_CHECK(t->shape() == btd && t->dtype == a.q.dtype, kBwd, ": ", name, " must be ",
                 shape_str(btd), " ", dtype_name(a.q.dtype), " (out's shape, q's dtype); got ",
                 describe(*t));
    RECOPS_CHECK(t->inner_contiguous(2), kBwd, ": ", name, "'s last dim must have stride 1; got ",
                 describe(*t));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "q", a.q, name, *t));
  }
  RECOPS_CHECK(a.lse.shape() == Shape({p->B, p->T}) && a.lse.dtype == DType::fp32, kBwd,
               ": lse must be [B, T] = ", shape_str({p->B, p->T}), " fp32 (the forward's); got ",
               describe(a.lse));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "q", a.q, "lse", a.lse));
  RECOPS_RETURN_IF_ERROR(ops::jagged_flash::check_out(kBwd, "dq", dq, a.q.shape(), a.q.dtype, a.q));
  RECOPS_RETURN_IF_ERROR(ops::jagged_flash::check_out(kBwd, "dk", dk, a.k.shape(), a.q.dtype, a.q));
  RECOPS_RETURN_IF_ERROR(ops::jagged_flash::check_out(kBwd, "dv", dv, a.v.shape(), a.q.dtype, a.q));
  RECOPS_RETURN_IF_ERROR(
      ops::jagged_flash::check_out(kBwd, "dbias", dbias, a.attn_bias.shape(), a.q.dtype, a.q));
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(kBwd, "seq_offsets", a.seq_offsets, p->total_L,
                                                "q.size(0) (total_L)", ctx));
  p->backward = true;
  p->grad = a.grad.data;
  p->grad_sb = a.grad.strides[0], p->grad_st = a.grad.strides[1];
  p->out = const_cast<void*>(a.out.data);
  p->out_sb = a.out.strides[0], p->out_st = a.out.strides[1];
  p->lse = const_cast<void*>(a.lse.data);
  p->lse_sb = a.lse.strides[0], p->lse_st = a.lse.strides[1];
  p->dq = dq.data, p->dk = dk.data, p->dv = dv.data, p->dbias = dbias.data;
  return Status::Ok();
}
}  // namespace

Status jagged_dense_flash_attention_bwd(const JaggedDenseFlashAttentionBwdArgs& a,
                                        const TensorView& dq, const TensorView& dk,
                                        const TensorView& dv, const TensorView& dbias,
                                        const Context& ctx) {
  using namespace ops::jagged_dense_flash_attention_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(bwd_checks(a, dq, dk, dv, dbias, &p, ctx));
  const bool empty = dq.numel() == 0 && dk.numel() == 0 && dbias.numel() == 0;
  return run(kBwd, p, empty, ctx, a.q.device.type);
}

Status jagged_dense_flash_attention_plain(const JaggedDenseFlashAttentionArgs& a,
                                          const TensorView& out, const TensorView& lse) {
  using namespace ops::jagged_dense_flash_attention_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(fwd_checks(kFwd, a, out, &lse, &p, Context{}));
  p.plain = true;
  p.out = out.data;
  p.lse = lse.data;
  return run_reference(p, Context{});
}

Status jagged_dense_flash_attention_bwd_plain(const JaggedDenseFlashAttentionBwdArgs& a,
                                              const TensorView& dq, const TensorView& dk,
                                              const TensorView& dv, const TensorView& dbias) {
  using namespace ops::jagged_dense_flash_attention_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(bwd_checks(a, dq, dk, dv, dbias, &p, Context{}));
  p.plain = true;
  return run_reference(p, Context{});
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::jagged_dense_flash_attention_ns {
namespace {
using Args = JaggedDenseFlashAttentionArgs;
using BwdArgs = JaggedDenseFlashAttentionBwdArgs;

Status fwd_lse_shapes(const Args& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(jagged_dense_flash_attention_shape(a, &s));
  outs->push_back({s, a.q.dtype});
  outs->push_back({{s[0], s[1]}, DType::fp32});
  return Status::Ok();
}
Status fwd_lse_run(const Args& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_dense_flash_attention_fwd(a, o.views[0], o.views[1], ctx);
}
Status bwd_shapes(const BwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Params p;
  const Args f{a.q, a.k, a.v, a.attn_bias, a.seq_offsets, a.max_seq_len, a.allow_tf32};
  RECOPS_RETURN_IF_ERROR(check_inputs(kBwd, f, &p));
  for (const TensorView* t : {&a.q, &a.k, &a.v, &a.attn_bias})
    outs->push_back({t->shape(), a.q.dtype});
  return Status::Ok();
}
Status bwd_run(const BwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_dense_flash_attention_bwd(a, o.views[0], o.views[1], o.views[2], o.views[3], ctx);
}

constexpr const char* kDoc =
    R"(Jagged-dense flash attention (FBGEMM SLL), one softmax per target column.

For each sequence b and target column t, over rows ``l < n_b = min(L_b, max_seq_len)``:
``s[l, t] = q[o_b + l] . k[b, :, t] + attn_bias[b, l, t]`` (no scale, no mask),
``out[b, t] = sum_l softmax_l(s[:, t])[l] * v[o_b + l]``.

Args:
    q: ``[total_L, D]`` jagged (acts as the keys), fp64, fp32, fp16 or bf16.
    k: ``[B, D, T]`` dense, T target columns per sample (act as the queries).
    v: ``[total_L, D]`` jagged, same offsets.
    attn_bias: ``[B, S, T]`` with ``S >= max_seq_len``.
    seq_offsets: ``[B+1]`` int32 or int64; ``seq_offsets[0] == 0``, non-decreasing,
        ``seq_offsets[B] == total_L``.
    max_seq_len: ``max_L >= 0``; longer sequences are truncated.
    allow_tf32: TF32 products for fp32 on CUDA (default False).

Returns:
    ``out [B, T, D]`` in q's dtype; an empty sequence (or a column whose scores are all -inf)
    gives 0. fp32 accumulation (fp64 for fp64). CUDA: D <= 256.

Differentiable in q, k, v and attn_bias (the op ``jagged_dense_flash_attention_bwd``; the
backward recomputes out and lse with ``jagged_dense_flash_attention_fwd``). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: shapes that do not match, mixed dtypes,
    ``attn_bias.size(1) < max_seq_len``, ``max_seq_len < 0``, invalid offsets.
)";
constexpr const char* kFwdDoc = R"(The forward of ``jagged_dense_flash_attention`` that also
returns ``lse [B, T]`` (fp32, ``log sum_l exp(s[l, t])``; -inf for an empty sequence): the
statistics its backward ``jagged_dense_flash_attention_bwd`` takes. Not differentiable.
)";
}  // namespace
}  // namespace recops::ops::jagged_dense_flash_attention_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::jagged_dense_flash_attention_ns;
  for (const char* op : {kOp, kFwd, kBwd})
    reg.add(OpInfo{op, "jagged", core::describe_impls(impls())});
  auto inputs = [](auto def, bool grad) {
    return def.template arg<&Args::q>("q", {.grad = grad, .dense_from = 1})
        .template arg<&Args::k>("k", {.grad = grad})
        .template arg<&Args::v>("v", {.grad = grad, .dense_from = 1})
        .template arg<&Args::attn_bias>("attn_bias", {.grad = grad})
        .template arg<&Args::seq_offsets>("seq_offsets")
        .template arg<&Args::max_seq_len>("max_seq_len", {.sym = true})
        .template arg<&Args::allow_tf32>("allow_tf32", {.def = "False"});
  };
  reg.add(inputs(kit::Def<Args>(kOp, "jagged"), true)
              .out("out")
              .shapes_from<&jagged_dense_flash_attention_shape, &Args::q>()
              .run_one<&jagged_dense_flash_attention>()
              .backward(kBwd)
              .doc("", kDoc)
              // When a gradient is needed the Autograd kernel runs _fwd and keeps its out and lse
              // for the backward (binding.cpp), which then has no forward to recompute.
              .save_outputs({"out", "lse"}, kFwd));
  reg.add(inputs(kit::Def<Args>(kFwd, "jagged"), false)
              .out("out")
              .out("lse")
              .shapes(fwd_lse_shapes)
              .run(fwd_lse_run)
              .doc("", kFwdDoc));
  reg.add(kit::Def<BwdArgs>(kBwd, "jagged")
              .arg<&BwdArgs::grad>("grad", {.dense_from = 2})
              .arg<&BwdArgs::q>("q", {.dense_from = 1})
              .arg<&BwdArgs::k>("k")
              .arg<&BwdArgs::v>("v", {.dense_from = 1})
              .arg<&BwdArgs::attn_bias>("attn_bias")
              .arg<&BwdArgs::seq_offsets>("seq_offsets")
              .arg<&BwdArgs::out>("out", {.dense_from = 2})
              .arg<&BwdArgs::lse>("lse")
              .arg<&BwdArgs::max_seq_len>("max_seq_len", {.sym = true})
              .arg<&BwdArgs::allow_tf32>("allow_tf32", {.def = "False"})
              .out_like("dq", "q")
              .out_like("dk", "k")
              .out_like("dv", "v")
              .out_like("dbias", "attn_bias")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
