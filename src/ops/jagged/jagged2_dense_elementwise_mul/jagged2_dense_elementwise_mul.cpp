// jagged/jagged2_dense_elementwise_mul/jagged2_dense_elementwise_mul.cpp: the entry. All
// validation happens here, once; then the ordered implementation list runs the first
// implementation that accepts. At the end: the op's registration (its OpInfos and argument
// tables).
#include "ops/jagged/jagged2_dense_elementwise_mul/jagged2_dense_elementwise_mul.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/jagged2_host.h"
#include "ops/jagged/common/select_host.h"
#include "ops/jagged/jagged2_dense_elementwise_mul/impls.h"

namespace recops::ops::jagged2_dense_elementwise_mul_ns {
namespace {
constexpr const char* kOp = "jagged2_dense_elementwise_mul";
constexpr const char* kBwd = "jagged2_dense_elementwise_mul_bwd";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

bool floating(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// The checks of everything but the data operand `a` (x or grad), whose shape is x's.
Status check_meta(const char* op, const TensorView& x, const TensorView& y,
                  const TensorView& seq_lengths, const TensorView& x_offsets, int64_t max_L) {
  RECOPS_CHECK(floating(x.dtype), op, ": x must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(x.dtype));
  RECOPS_CHECK(x.ndim == 1, op, ": x must be 1-D [sum N_b^2], got ", describe(x));
  RECOPS_CHECK(max_L >= 0, op, ": max_seq_len=", max_L, " must be >= 0");
  RECOPS_CHECK(y.ndim == 2 && y.sizes[0] == max_L && y.sizes[1] == max_L && y.dtype == x.dtype &&
                   y.inner_contiguous(1),
               op, ": y must be [max_seq_len, max_seq_len] = [", max_L, ", ", max_L, "] of x's ",
               "dtype ", dtype_name(x.dtype), " with last stride 1; got ", describe(y));
  RECOPS_RETURN_IF_ERROR(select_check_int_1d(op, "seq_lengths", seq_lengths));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "x_offsets", x_offsets));
  RECOPS_CHECK(seq_lengths.sizes[0] == x_offsets.sizes[0] - 1, op, ": seq_lengths has ",
               seq_lengths.sizes[0], " elements but x_offsets has ", x_offsets.sizes[0],
               "; seq_lengths must be [B] with x_offsets [B+1]");
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "x", x, "y", y));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "x", x, "seq_lengths", seq_lengths));
  return core::check_same_device(op, "x", x, "x_offsets", x_offsets);
}

// out (or dx): contiguous, x's shape and dtype, x's device.
Status check_out(const char* op, const char* name, const TensorView& out, const TensorView& x) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "x", x, name, out));
  RECOPS_CHECK(out.shape() == x.shape() && out.dtype == x.dtype && out.is_contiguous(), op, ": ",
               name, " must be contiguous and like x (", describe(x), "); got ", describe(out));
  return Status::Ok();
}

Status run(const char* op, const TensorView& a, const TensorView& y, const TensorView& seq_lengths,
           const TensorView& x_offsets, int64_t max_L, const TensorView& out, const Context& ctx) {
  Params p;
  p.a = a.data;
  p.a_stride = a.strides[0];
  p.y = y.data;
  p.y_row_stride = y.strides[0];
  p.out = out.data;
  p.dtype = a.dtype;
  p.offsets = x_offsets.data;
  p.offsets_int64 = x_offsets.dtype == DType::int64;
  p.offsets_stride = x_offsets.strides[0];
  p.lengths = seq_lengths.data;
  p.lengths_int64 = seq_lengths.dtype == DType::int64;
  p.lengths_stride = seq_lengths.strides[0];
  p.B = seq_lengths.sizes[0];
  p.max_L = max_L;
  p.total = a.sizes[0];
  p.device_index = a.device.index;
  RECOPS_RETURN_IF_ERROR(jagged2_validate(op, "x_offsets", x_offsets, p.total, "x.size(0) (total)",
                                          &seq_lengths, "seq_lengths", ctx));
  if (out.numel() == 0) return Status::Ok();  // no elements: nothing to launch
  return core::dispatch(op, impls(), a.device.type, p, ctx);
}
}  // namespace
}  // namespace recops::ops::jagged2_dense_elementwise_mul_ns

namespace recops {

Status jagged2_dense_elementwise_mul(const Jagged2DenseElementwiseMulArgs& a, const TensorView& out,
                                     const Context& ctx) {
  using namespace ops::jagged2_dense_elementwise_mul_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(kOp, a.x, a.y, a.seq_lengths, a.x_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(check_out(kOp, "out", out, a.x));
  return run(kOp, a.x, a.y, a.seq_lengths, a.x_offsets, a.max_seq_len, out, ctx);
}

Status jagged2_dense_elementwise_mul_bwd(const Jagged2DenseElementwiseMulBwdArgs& a,
                                         const TensorView& dx, const Context& ctx) {
  using namespace ops::jagged2_dense_elementwise_mul_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(kBwd, a.x, a.y, a.seq_lengths, a.x_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "grad", a.grad, "x", a.x));
  RECOPS_CHECK(a.grad.shape() == a.x.shape() && a.grad.dtype == a.x.dtype, kBwd, ": grad ",
               describe(a.grad), " must have x's shape and dtype (", describe(a.x), ")");
  RECOPS_RETURN_IF_ERROR(check_out(kBwd, "dx", dx, a.x));
  return run(kBwd, a.grad, a.y, a.seq_lengths, a.x_offsets, a.max_seq_len, dx, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::jagged2_dense_elementwise_mul_ns {
namespace {
using A = Jagged2DenseElementwiseMulArgs;
using G = Jagged2DenseElementwiseMulBwdArgs;

Status fwd_shapes(const A& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_meta(kOp, a.x, a.y, a.seq_lengths, a.x_offsets, a.max_seq_len));
  outs->push_back({a.x.shape(), a.x.dtype});
  return Status::Ok();
}
Status fwd_run(const A& a, const kit::Outputs& o, const Context& ctx) {
  return jagged2_dense_elementwise_mul(a, o.views[0], ctx);
}
Status bwd_shapes(const G& a, std::vector<kit::OutSpec>* outs) {
  RECOPS_RETURN_IF_ERROR(check_meta(kBwd, a.x, a.y, a.seq_lengths, a.x_offsets, a.max_seq_len));
  outs->push_back({a.x.shape(), a.x.dtype});
  return Status::Ok();
}
Status bwd_run(const G& a, const kit::Outputs& o, const Context& ctx) {
  return jagged2_dense_elementwise_mul_bwd(a, o.views[0], ctx);
}

constexpr const char* kDoc =
    R"(Multiplies each square block of a jagged² tensor by a shared dense matrix.

Block ``b`` of ``x`` is an ``N_b x N_b`` row-major matrix, ``N_b = seq_lengths[b]``, starting at
``x_offsets[b]``; ``y`` (e.g. a causal or decay mask) is shared by the batch.

Args:
    x: ``[sum N_b^2]``, fp64, fp32, fp16 or bf16.
    y: ``[max_seq_len, max_seq_len]``, x's dtype. A constant: it gets no gradient, and a y that
        requires grad is refused (SLL silently returns none).
    seq_lengths: ``[B]`` int32 or int64, the sides ``N_b >= 0``.
    x_offsets: ``[B+1]`` int32 or int64, the complete cumsum of ``N_b^2``, ending at
        ``x.size(0)``.
    max_seq_len: ``max_L >= 0``.

Returns:
    like ``x``: ``out_b[m, n] = x_b[m, n] * y[m, n]`` for ``m, n < min(N_b, max_L)``, 0 elsewhere
    in the block (rows strided by ``N_b``; SLL strides them by ``min(N_b, max_L)``). One rounding
    of the exact product.

Differentiable in ``x`` (the op ``jagged2_dense_elementwise_mul_bwd``: ``dx = grad * y`` on the
same window, 0 elsewhere). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: x not 1-D or not floating; y not
    ``[max_L, max_L]`` of x's dtype; seq_lengths not ``[B]``; offsets not starting at 0,
    decreasing, not ending at ``x.size(0)``, or a block size other than ``seq_lengths[b]^2``
    (on CUDA checked only with validation on); ``max_seq_len < 0``; tensors on different
    devices; y requiring grad while a gradient is recorded.
)";
}  // namespace
}  // namespace recops::ops::jagged2_dense_elementwise_mul_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::jagged2_dense_elementwise_mul_ns;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  // y is marked differentiable only so that a y requiring grad reaches the binding's save hook,
  // which refuses it (binding.cpp); its gradient is never computed.
  reg.add(kit::Def<A>(kOp, "jagged")
              .arg<&A::x>("x", {.grad = true})
              .arg<&A::y>("y", {.grad = true, .dense_from = 1})
              .arg<&A::seq_lengths>("seq_lengths")
              .arg<&A::x_offsets>("x_offsets")
              .arg<&A::max_seq_len>("max_seq_len", {.sym = true})
              .out_like("out", "x")
              .shapes(fwd_shapes)
              .run(fwd_run)
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<G>(kBwd, "jagged")
              .arg<&G::grad>("grad")
              .arg<&G::x>("x")
              .arg<&G::y>("y", {.dense_from = 1})
              .arg<&G::seq_lengths>("seq_lengths")
              .arg<&G::x_offsets>("x_offsets")
              .arg<&G::max_seq_len>("max_seq_len", {.sym = true})
              .out_like("dx", "x")
              .shapes(bwd_shapes)
              .run(bwd_run)
              .doc("-", ""));
}
