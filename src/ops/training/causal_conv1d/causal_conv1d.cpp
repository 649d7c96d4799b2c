// training/causal_conv1d/causal_conv1d.cpp: the entry of causal_conv1d and causal_conv1d_bwd.
// All validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts. At the end: the OpInfos and argument tables.
#include "ops/training/causal_conv1d/causal_conv1d.h"

#include <string>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/training/causal_conv1d/cuda/tiles.h"
#include "ops/training/causal_conv1d/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::causal_conv1d_ns {
namespace {
constexpr const char* kOp = "causal_conv1d";
constexpr const char* kBwd = "causal_conv1d_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

bool is_float(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

Strides3 strides_of(const TensorView& t) {
  return {t.strides[0], t.strides[1], t.strides[2]};
}

// A [B, D, T] tensor of x's dtype and device, any non-negative strides.
Status check_btd(const char* op, const char* name, const TensorView& t, const TensorView& x) {
  RECOPS_CHECK(t.ndim == 3 && t.shape() == x.shape() && t.dtype == x.dtype, op, ": ", name,
               " must be ", dtype_name(x.dtype), "[", x.sizes[0], ", ", x.sizes[1], ", ",
               x.sizes[2], "] (x's shape and dtype); got ", describe(t));
  RECOPS_CHECK(t.strides[0] >= 0 && t.strides[1] >= 0 && t.strides[2] >= 0, op, ": ", name,
               " must have non-negative strides");
  return core::check_same_device(op, "x", x, name, t);
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// A contiguous tensor of `shape` and `dtype` on x's device.
Status check_exact(const char* op, const char* name, const TensorView& t, const TensorView& x,
                   const Shape& shape, DType dtype) {
  RECOPS_CHECK(t.shape() == shape && t.dtype == dtype && t.is_contiguous(), op, ": ", name,
               " must be contiguous ", dtype_name(dtype), shape_str(shape), "; got ", describe(t));
  return core::check_same_device(op, "x", x, name, t);
}

// Every rule of the arguments the forward and the backward share; *p gets them.
// ctx: the call's context, or nullptr in shape functions (no data: offsets values unchecked).
template <class A>
Status check_args(const char* op, const A& a, const Context* ctx, Params* p) {
  const TensorView& x = a.x;
  RECOPS_CHECK(x.ndim == 3 && is_float(x.dtype), op,
               ": x must be [B, D, T] of fp64, fp32, fp16 or bf16; got ", describe(x));
  RECOPS_CHECK(x.strides[0] >= 0 && x.strides[1] >= 0 && x.strides[2] >= 0, op,
               ": x must have non-negative strides");
  const int64_t B = x.sizes[0], D = x.sizes[1], T = x.sizes[2];
  const int lay = static_cast<int>(a.weight_layout);
  RECOPS_CHECK(lay == 0 || lay == 1, op, ": weight_layout=", lay, " must be DW (0) or WD (1)");
  const bool wd = a.weight_layout == ConvWeightLayout::WD;
  const TensorView& w = a.weight;
  RECOPS_CHECK(w.ndim == 2 && w.dtype == x.dtype && w.is_contiguous() && w.sizes[wd ? 1 : 0] == D,
               op, ": weight must be contiguous ", dtype_name(x.dtype), wd ? "[W, D]" : "[D, W]",
               " with D=", D, " (x's dim 1 and dtype; weight_layout=", wd ? "WD" : "DW", "); got ",
               describe(w));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "x", x, "weight", w));
  const int64_t W = w.sizes[wd ? 0 : 1];
  RECOPS_CHECK(W >= 1 && W <= 8, op, ": the kernel width W=", W, " must be in 1..8");
  if (a.bias) RECOPS_RETURN_IF_ERROR(check_exact(op, "bias", *a.bias, x, {D}, x.dtype));
  const int act = static_cast<int>(a.activation);
  RECOPS_CHECK(act >= 0 && act <= 2, op, ": activation=", act,
               " must be none (0), silu (1) or swish (2, = silu)");
  RECOPS_CHECK(a.state_len == 0 || a.state_len == W - 1 || a.state_len == W, op,
               ": state_len=", a.state_len, " must be 0 (= W-1), W-1=", W - 1, " or W=", W);
  const int64_t S = a.state_len == 0 ? W - 1 : a.state_len;
  RECOPS_CHECK(!(a.seq_idx && a.seq_offsets), op,
               ": seq_idx and seq_offsets describe varlen two ways; give at most one");
  int64_t N = B;
  if (a.seq_idx) {
    const TensorView& s = *a.seq_idx;
    RECOPS_CHECK(s.ndim == 2 && s.sizes[0] == B && s.sizes[1] == T && s.is_contiguous() &&
                     (s.dtype == DType::int32 || s.dtype == DType::int64),
                 op, ": seq_idx must be contiguous int32 or int64 [B, T] = [", B, ", ", T,
                 "]; got ", describe(s));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "x", x, "seq_idx", s));
    RECOPS_CHECK(!a.initial_state && !a.output_final_state, op,
                 ": initial_state and output_final_state are not allowed with seq_idx (as in "
                 "Dao's causal_conv1d); use seq_offsets for per-sequence states");
    p->seq_idx = s.data;
    p->idx_dtype = s.dtype;
  }
  if (a.seq_offsets) {
    RECOPS_RETURN_IF_ERROR(
        training::check_packed_offsets(op, "x", x, *a.seq_offsets, B, T, "T (x's dim 2)", ctx, &N));
    p->seq_offsets = a.seq_offsets->data;
    p->off_dtype = a.seq_offsets->dtype;
  }
  p->state_dtype = x.dtype;
  if (a.initial_state) {
    const TensorView& s = *a.initial_state;
    RECOPS_CHECK(s.dtype == x.dtype || s.dtype == DType::fp32, op,
                 ": initial_state must be of x's dtype (", dtype_name(x.dtype), ") or fp32; got ",
                 dtype_name(s.dtype));
    RECOPS_RETURN_IF_ERROR(check_exact(op, "initial_state [N, D, S]", s, x, {N, D, S}, s.dtype));
    p->init = s.data;
    p->state_dtype = s.dtype;
  }
  if (a.residual) RECOPS_RETURN_IF_ERROR(check_btd(op, "residual", *a.residual, x));
  p->silu = a.activation != ConvActivation::none;
  p->wd = wd;
  p->dtype = x.dtype;
  p->B = B;
  p->D = D;
  p->T = T;
  p->W = W;
  p->S = S;
  p->N = N;
  p->sx = strides_of(x);
  p->x = x.data;
  p->weight = w.data;
  p->bias = a.bias ? a.bias->data : nullptr;
  if (a.residual) {
    p->residual = a.residual->data;
    p->sres = strides_of(*a.residual);
  }
  p->device_index = x.device.index;
  return Status::Ok();
}

// A CUDA backward's dweight/dbias partials: [P, D, W+1] of acc_t.
size_t partial_bytes(const Params& p) {
  const size_t acc = p.dtype == DType::fp64 ? sizeof(double) : sizeof(float);
  return static_cast<size_t>(partial_chunks(p.B * p.T) * p.D * (p.W + 1)) * acc;
}
}  // namespace
}  // namespace recops::ops::causal_conv1d_ns

namespace recops {

Status causal_conv1d_shape(const CausalConv1dArgs& a, Shape* y_shape, Shape* state_shape,
                           DType* state_dtype) {
  using namespace ops::causal_conv1d_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, nullptr, &p));
  *y_shape = a.x.shape();
  *state_shape = a.output_final_state ? Shape{p.N, p.D, p.S} : Shape{0};
  *state_dtype = p.state_dtype;
  return Status::Ok();
}

Status causal_conv1d(const CausalConv1dArgs& a, const TensorView& y, const TensorView* final_state,
                     const Context& ctx) {
  using namespace ops::causal_conv1d_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a, &ctx, &p));
  RECOPS_RETURN_IF_ERROR(check_btd(kOp, "y", y, a.x));
  RECOPS_CHECK(a.output_final_state == (final_state != nullptr), kOp,
               ": final_state must be given exactly when output_final_state is true");
  p.y = y.data;
  p.sy = strides_of(y);
  if (final_state) {
    RECOPS_RETURN_IF_ERROR(
        check_exact(kOp, "final_state", *final_state, a.x, {p.N, p.D, p.S}, p.state_dtype));
    p.final_state = final_state->data;
  }
  if (p.N * p.D == 0 || (p.B * p.T == 0 && !final_state)) return Status::Ok();  // nothing to do
  return core::dispatch(kOp, impls(), a.x.device.type, p, ctx);
}

size_t causal_conv1d_bwd_workspace_bytes(const CausalConv1dBwdArgs& a) {
  using namespace ops::causal_conv1d_ns;
  Params p;
  if (a.x.device.type != DeviceType::cuda || !check_args(kBwd, a, nullptr, &p).ok()) return 0;
  return partial_bytes(p);
}

Status causal_conv1d_bwd(const CausalConv1dBwdArgs& a, const TensorView& dx,
                         const TensorView& dweight, const TensorView* dbias,
                         const TensorView* dinitial_state, const TensorView* dresidual,
                         const Context& ctx) {
  using namespace ops::causal_conv1d_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, &ctx, &p));
  RECOPS_RETURN_IF_ERROR(check_btd(kBwd, "grad_y", a.grad_y, a.x));
  const TensorView& g = a.grad_final_state;
  if (!(g.ndim == 1 && g.sizes[0] == 0)) {
    RECOPS_CHECK(a.output_final_state, kBwd,
                 ": grad_final_state must be an empty [0] tensor when output_final_state is "
                 "false; got ",
                 describe(g));
    RECOPS_RETURN_IF_ERROR(
        check_exact(kBwd, "grad_final_state", g, a.x, {p.N, p.D, p.S}, p.state_dtype));
    p.dfinal = g.data;
  }
  RECOPS_RETURN_IF_ERROR(check_btd(kBwd, "dx", dx, a.x));
  RECOPS_RETURN_IF_ERROR(check_exact(kBwd, "dweight", dweight, a.x, a.weight.shape(), a.x.dtype));
  const bool with_db = a.bias && a.want_dbias;
  const bool with_di = a.initial_state && a.want_dinitial_state;
  const bool with_dr = a.residual && a.want_dresidual;
  RECOPS_CHECK(with_db == (dbias != nullptr), kBwd,
               ": dbias must be given exactly when bias is given and want_dbias is true");
  RECOPS_CHECK(with_di == (dinitial_state != nullptr), kBwd,
               ": dinitial_state must be given exactly when initial_state is given and "
               "want_dinitial_state is true");
  RECOPS_CHECK(with_dr == (dresidual != nullptr), kBwd,
               ": dresidual must be given exactly when residual is given and want_dresidual is "
               "true");
  if (with_db) RECOPS_RETURN_IF_ERROR(check_exact(kBwd, "dbias", *dbias, a.x, {p.D}, a.x.dtype));
  if (with_di)
    RECOPS_RETURN_IF_ERROR(
        check_exact(kBwd, "dinitial_state", *dinitial_state, a.x, {p.N, p.D, p.S}, p.state_dtype));
  if (with_dr) RECOPS_RETURN_IF_ERROR(check_btd(kBwd, "dresidual", *dresidual, a.x));
  p.backward = true;
  p.dy = a.grad_y.data;
  p.sdy = strides_of(a.grad_y);
  p.dx = dx.data;
  p.sdx = strides_of(dx);
  p.dweight = dweight.data;
  p.dbias = with_db ? dbias->data : nullptr;
  p.dinit = with_di ? dinitial_state->data : nullptr;
  if (with_dr) {
    p.dres = dresidual->data;
    p.sdres = strides_of(*dresidual);
  }
  if (p.D == 0) return Status::Ok();  // no channels: every output is empty
  if (a.x.device.type == DeviceType::cuda) {
    const size_t need = partial_bytes(p);
    RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), kBwd,
                 ": the workspace must hold ", need,
                 " bytes (causal_conv1d_bwd_workspace_bytes); got ", ctx.workspace_bytes);
    p.workspace = ctx.workspace;
  }
  return core::dispatch(kBwd, impls(), a.x.device.type, p, ctx);  // N = 0: dweight, dbias = 0
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::causal_conv1d_ns {
namespace {
Status fwd_shapes(const CausalConv1dArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape ys, ss;
  DType sd;
  RECOPS_RETURN_IF_ERROR(causal_conv1d_shape(a, &ys, &ss, &sd));
  outs->push_back({ys, a.x.dtype});
  outs->push_back({ss, sd, a.output_final_state});
  return Status::Ok();
}
Status fwd_run(const CausalConv1dArgs& a, const kit::Outputs& o, const Context& ctx) {
  return causal_conv1d(a, o.views[0], o.get(1), ctx);
}
Status bwd_shapes(const CausalConv1dBwdArgs& a, std::vector<kit::OutSpec>* outs) {
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, a, nullptr, &p));
  const bool with_db = a.bias && a.want_dbias;
  const bool with_di = a.initial_state && a.want_dinitial_state;
  const bool with_dr = a.residual && a.want_dresidual;
  outs->push_back({a.x.shape(), a.x.dtype});
  outs->push_back({a.weight.shape(), a.x.dtype});
  outs->push_back({with_db ? Shape{p.D} : Shape{0}, a.x.dtype, with_db});
  outs->push_back({with_di ? Shape{p.N, p.D, p.S} : Shape{0}, p.state_dtype, with_di});
  outs->push_back({with_dr ? a.x.shape() : Shape{0}, a.x.dtype, with_dr});
  return Status::Ok();
}
Status bwd_run(const CausalConv1dBwdArgs& a, const kit::Outputs& o, const Context& ctx) {
  return causal_conv1d_bwd(a, o.views[0], o.views[1], o.get(2), o.get(3), o.get(4), ctx);
}
size_t bwd_workspace(const CausalConv1dBwdArgs& a, const kit::Outputs&) {
  return causal_conv1d_bwd_workspace_bytes(a);
}

constexpr const char* kActNames = "none silu swish";
constexpr const char* kLayoutNames = "DW WD";

constexpr const char* kDoc =
    R"(Depthwise causal 1-D convolution (Dao-AILab causal-conv1d; fla ShortConvolution).

Per sequence, channel d and position t:
``z_t = bias[d] + sum_k weight[d, k] * x~[t - (W-1) + k]``, ``y = act(z) (+ residual)``, where
x~ is x preceded by the initial state (zeros without one); tap W-1 multiplies the current token.

Args:
    x: ``[B, D, T]``, fp64, fp32, fp16 or bf16; channel-first (contiguous) or channel-last
        (``x_btd.transpose(1, 2)``); y is always returned channel-first contiguous.
    weight: ``[D, W]`` (``weight_layout="DW"``) or ``[W, D]`` ("WD"), 1 <= W <= 8, x's dtype.
    bias: ``[D]`` or None.
    initial_state: ``[N, D, S]`` of x's dtype or fp32, or None (zeros); column S-1 is x[-1].
    output_final_state: also return the last S entries of [initial_state | x] along time.
    activation: "none", "silu" or "swish" (= silu).
    seq_idx: ``[B, T]`` int32/int64 (Dao): a tap counts only within equal seq_idx; no states.
    seq_offsets: ``[N+1]`` int32/int64 (fla cu_seqlens) of packed sequences; needs B = 1.
    residual: like x, added after the activation.
    weight_layout: "DW" or "WD"; the weight gradient comes back in the same layout.
    state_len: S, W-1 (0 means W-1) or W (fla/MindSpeed; column 0 is never read).

Returns:
    ``(y, final_state)``: y ``[B, D, T]`` of x's dtype; final_state ``[N, D, S]`` in the state's
    dtype, or an empty ``[0]`` tensor when output_final_state is False (the kit has no optional
    outputs).

Differentiable in x, weight, bias, initial_state and residual (the op ``causal_conv1d_bwd``,
which recomputes z; dweight and dbias are reduced in a fixed order). Double backward raises.
)";
}  // namespace
}  // namespace recops::ops::causal_conv1d_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::causal_conv1d_ns;
  using A = CausalConv1dArgs;
  using B = CausalConv1dBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(
      kit::Def<A>(kOp, "training")
          .arg<&A::x>("x", {.grad = true})
          .arg<&A::weight>("weight", {.grad = true, .dense_from = 0})
          .arg<&A::bias>("bias", {.def = "None", .grad = true, .dense_from = 0})
          .arg<&A::initial_state>("initial_state", {.def = "None", .grad = true, .dense_from = 0})
          .arg<&A::output_final_state>("output_final_state", {.def = "False"})
          .arg<&A::activation>("activation", {.def = "0", .py = {.names = kActNames}})
          .arg<&A::seq_idx>("seq_idx", {.def = "None", .dense_from = 0})
          .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
          .arg<&A::residual>("residual", {.def = "None", .grad = true})
          .arg<&A::weight_layout>("weight_layout", {.def = "0", .py = {.names = kLayoutNames}})
          .arg<&A::state_len>("state_len", {.def = "0"})
          .out("y")
          .out("final_state")
          .shapes(fwd_shapes)
          .run(fwd_run)
          .backward(kBwd)
          .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::grad_y>("grad_y")
              .arg<&B::grad_final_state>("grad_final_state", {.dense_from = 0})
              .arg<&B::x>("x")
              .arg<&B::weight>("weight", {.dense_from = 0})
              .arg<&B::bias>("bias", {.def = "None", .dense_from = 0})
              .arg<&B::initial_state>("initial_state", {.def = "None", .dense_from = 0})
              .arg<&B::output_final_state>("output_final_state", {.def = "False"})
              .arg<&B::activation>("activation", {.def = "0"})
              .arg<&B::seq_idx>("seq_idx", {.def = "None", .dense_from = 0})
              .arg<&B::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&B::residual>("residual", {.def = "None"})
              .arg<&B::weight_layout>("weight_layout", {.def = "0"})
              .arg<&B::state_len>("state_len", {.def = "0"})
              .arg<&B::want_dbias>("want_dbias", {.def = "True"})
              .arg<&B::want_dinitial_state>("want_dinitial_state", {.def = "True"})
              .arg<&B::want_dresidual>("want_dresidual", {.def = "True"})
              .out_like("dx", "x")
              .out("dweight")
              .out("dbias")
              .out("dinitial_state")
              .out("dresidual")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .workspace(bwd_workspace)
              .doc("-", ""));
}
