// training/mhc_post/mhc_post.cpp: the entry. All validation happens here, once; then the ordered
// implementation list runs the first implementation that accepts. At the end: the registration
// (the OpInfos for `recops list` and the argument tables for the bindings).
#include "ops/training/mhc_post/mhc_post.h"

#include <algorithm>
#include <string_view>

#include "core/cpu_features.h"
#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/common/mhc_entry.h"
#include "ops/training/mhc_post/impls.h"

namespace recops::ops::mhc_post_ns {
namespace {
using training::check_like;
using training::check_streams;
using training::mhc_coef_dtype;
using training::mhc_lead_plus;
using training::mhc_tokens;

constexpr const char* kOp = "mhc_post";
constexpr const char* kBwd = "mhc_post_bwd";

// cuda_sm80 (CUDA builds), cpu_avx2 (where core::avx2_fma_reason() allows), cpu_generic,
// reference (README, Implementations).
const std::vector<core::Impl<Params>>& impls() {
  static const auto list = [] {
    auto l = core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
    const auto generic = std::find_if(l.begin(), l.end(), [](const core::Impl<Params>& im) {
      return std::string_view(im.id) == "cpu_generic";
    });
    l.insert(generic, core::Impl<Params>{"cpu_avx2", DeviceType::cpu, core::avx2_fma_reason,
                                         core::accept_all<Params>, run_cpu_avx2});
    return l;
  }();
  return list;
}

// The forward's arguments, shared by the forward and the backward.
Status check_args(const char* op, const MhcPostArgs& a) {
  const TensorView& X = a.X;
  RECOPS_RETURN_IF_ERROR(check_streams(op, X));
  const int64_t n = X.size(-2), C = X.size(-1);
  const DType cd = mhc_coef_dtype(X.dtype);
  RECOPS_RETURN_IF_ERROR(check_like(op, "y", a.y, X, mhc_lead_plus(X, {C}), X.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(op, "post", a.post, X, mhc_lead_plus(X, {n}), cd));
  RECOPS_RETURN_IF_ERROR(check_like(op, "comb", a.comb, X, mhc_lead_plus(X, {n, n}), cd));
  const auto layout = static_cast<int64_t>(a.comb_layout);
  RECOPS_CHECK(layout == 0 || layout == 1, op,
               ": comb_layout must be 0 (in_out) or 1 (out_in), got ", layout);
  return Status::Ok();
}

Params params_of(const MhcPostArgs& a) {
  Params p;
  p.X = a.X.data;
  p.y = a.y.data;
  p.post = a.post.data;
  p.comb = a.comb.data;
  p.dtype = a.X.dtype;
  p.coef_dtype = mhc_coef_dtype(a.X.dtype);
  p.n = a.X.size(-2);
  p.C = a.X.size(-1);
  p.tokens = mhc_tokens(a.X);
  p.device_index = a.X.device.index;
  p.out_in = a.comb_layout == MhcCombLayout::out_in;
  return p;
}

MhcPostArgs fwd_of(const MhcPostBwdArgs& a) {
  return {a.X, a.y, a.post, a.comb, a.comb_layout};
}
}  // namespace
}  // namespace recops::ops::mhc_post_ns

namespace recops {

Status mhc_post_shape(const MhcPostArgs& a, Shape* out_shape) {
  using namespace ops::mhc_post_ns;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a));
  *out_shape = a.X.shape();
  return Status::Ok();
}

Status mhc_post(const MhcPostArgs& a, const TensorView& out, const Context& ctx) {
  using namespace ops::mhc_post_ns;
  RECOPS_RETURN_IF_ERROR(check_args(kOp, a));
  RECOPS_RETURN_IF_ERROR(check_like(kOp, "out", out, a.X, a.X.shape(), a.X.dtype));
  Params p = params_of(a);
  p.out = out.data;
  if (p.tokens == 0 || p.n == 0 || p.C == 0) return Status::Ok();  // empty: nothing to write
  return core::dispatch(kOp, impls(), a.X.device.type, p, ctx);
}

Status mhc_post_bwd(const MhcPostBwdArgs& a, const TensorView& dX, const TensorView& dy,
                    const TensorView& dpost, const TensorView& dcomb, const Context& ctx) {
  using namespace ops::mhc_post_ns;
  const MhcPostArgs f = fwd_of(a);
  RECOPS_RETURN_IF_ERROR(check_args(kBwd, f));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dout", a.dout, a.X, a.X.shape(), a.X.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dX", dX, a.X, a.X.shape(), a.X.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dy", dy, a.X, a.y.shape(), a.y.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dpost", dpost, a.X, a.post.shape(), a.post.dtype));
  RECOPS_RETURN_IF_ERROR(check_like(kBwd, "dcomb", dcomb, a.X, a.comb.shape(), a.comb.dtype));
  Params p = params_of(f);
  p.dout = a.dout.data;
  p.dX = dX.data;
  p.dy = dy.data;
  p.dpost = dpost.data;
  p.dcomb = dcomb.data;
  p.backward = true;
  // C = 0 still writes dpost and dcomb, and n = 0 still writes dy (zeros: empty sums).
  if (p.tokens == 0) return Status::Ok();
  return core::dispatch(kBwd, impls(), a.X.device.type, p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::mhc_post_ns {
namespace {
constexpr const char* kLayoutNames = "in_out out_in";
constexpr const char* kDoc = R"(mHC post-mix (DeepSeek V4 hyper-connections): expands a block's
output back into the n residual streams and mixes the streams,
``out[..., j, :] = post[..., j] * y + sum_i comb[..., i, j] * X[..., i, :]``.

Args:
    X: ``[..., n, C]`` residual streams, fp64, fp32, fp16 or bf16.
    y: ``[..., C]`` the block's output, X's dtype.
    post: ``[..., n]`` fp32 (fp64 when X is fp64).
    comb: ``[..., n, n]`` post's dtype, the combine matrix.
    comb_layout: "in_out" (``comb[i, j]``: from input stream i to output stream j; DeepSeek V4,
        TileKernels) or "out_in" (``comb[j, i]``; Megatron-LM).

Returns:
    out ``[..., n, C]`` in X's dtype (fp64 arithmetic on the CPU; one rounding).

Differentiable in X, y, post and comb (the op ``mhc_post_bwd``; dpost and dcomb in post's
dtype, summed per token in a fixed order).
)";
}  // namespace
}  // namespace recops::ops::mhc_post_ns

namespace {
recops::Status post_bwd_shapes(const recops::MhcPostBwdArgs& a,
                               std::vector<recops::kit::OutSpec>* outs) {
  using namespace recops;
  Shape s;
  RECOPS_RETURN_IF_ERROR(mhc_post_shape({a.X, a.y, a.post, a.comb, a.comb_layout}, &s));
  RECOPS_CHECK(a.dout.shape() == a.X.shape() && a.dout.dtype == a.X.dtype,
               "mhc_post_bwd: ", "dout must have X's shape and dtype (", describe(a.X), "), got ",
               describe(a.dout));
  outs->push_back({a.X.shape(), a.X.dtype});
  outs->push_back({a.y.shape(), a.y.dtype});
  outs->push_back({a.post.shape(), a.post.dtype});
  outs->push_back({a.comb.shape(), a.comb.dtype});
  return Status::Ok();
}
recops::Status post_bwd_run(const recops::MhcPostBwdArgs& a, const recops::kit::Outputs& o,
                            const recops::Context& ctx) {
  return recops::mhc_post_bwd(a, o.views[0], o.views[1], o.views[2], o.views[3], ctx);
}
}  // namespace

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::mhc_post_ns;
  using A = MhcPostArgs;
  using B = MhcPostBwdArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::X>("X", {.grad = true, .dense_from = 0})
              .arg<&A::y>("y", {.grad = true, .dense_from = 0})
              .arg<&A::post>("post", {.grad = true, .dense_from = 0})
              .arg<&A::comb>("comb", {.grad = true, .dense_from = 0})
              .arg<&A::comb_layout>("comb_layout", {.def = "0", .py = {.names = kLayoutNames}})
              .out_like("out", "X")
              .shapes_from<&mhc_post_shape, &A::X>()
              .run_one<&mhc_post>()
              .backward(kBwd)
              .doc("", kDoc));
  reg.add(kit::Def<B>(kBwd, "training")
              .arg<&B::dout>("dout", {.dense_from = 0})
              .arg<&B::X>("X", {.dense_from = 0})
              .arg<&B::y>("y", {.dense_from = 0})
              .arg<&B::post>("post", {.dense_from = 0})
              .arg<&B::comb>("comb", {.dense_from = 0})
              .arg<&B::comb_layout>("comb_layout", {.def = "0"})
              .out_like("dX", "X")
              .out_like("dy", "y")
              .out_like("dpost", "post")
              .out_like("dcomb", "comb")
              .shapes(post_bwd_shapes)
              .run(post_bwd_run)
              .doc("-", ""));
}
