// tests/fuzz/fuzz_training2_entries.cpp: the public C++ entries on the CPU of the training ops
// that fuzz_training_entries and fuzz_gdn_entries do not reach: chunk_loss (+ _fwd, _bwd, the
// workspace functions and the _plain baselines), inplace_rope_ (+ _bwd), mhc_pre_bmm (+ _bwd),
// mhc_post (+ _bwd) and mhc_sinkhorn (+ _bwd), with extents (0 and huge ones), dtypes, strides,
// optional tensors, label values, scalars and options derived from the fuzz input. Each call must
// return an error Status or run; a crash, a hang or a sanitizer report is a finding. Its own
// target, so that the seeds of the other two keep their meaning. The op is picked from the
// input's last byte modulo 5 (see tests/fuzz/corpus/README.md).
#include <algorithm>
#include <utility>

#include "fuzz_util.h"
#include "ops/training/chunk_loss/chunk_loss.h"
#include "ops/training/inplace_rope/inplace_rope.h"
#include "ops/training/mhc_post/mhc_post.h"
#include "ops/training/mhc_pre_bmm/mhc_pre_bmm.h"
#include "ops/training/mhc_sinkhorn/mhc_sinkhorn.h"

namespace {

using namespace recops_fuzz;
using recops::DType;
using recops::Shape;

// A context naming the implementation (or the default), with a workspace of about `need` bytes
// (sometimes one too few, sometimes none); its buffer in *ws.
recops::Context ctx_arg(FuzzedDataProvider& fdp, size_t need, std::vector<uint8_t>* ws) {
  recops::Context ctx;
  ctx.impl = impl_arg(fdp, {"reference", "cpu_generic"});
  ctx.num_threads = fdp.ConsumeIntegralInRange<int>(0, 3);
  size_t give = need;
  switch (fdp.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: give = need > 0 ? need - 1 : 0; break;
    case 1: give = 0; break;
    default: break;
  }
  if (give > (size_t{1} << 24)) return ctx;  // beyond the harness's memory: none given
  ws->assign(give, 0);
  ctx.workspace = give ? ws->data() : nullptr;
  ctx.workspace_bytes = give;
  return ctx;
}

// Plain baseline one time in eight, else the entry with a context.
bool plain(FuzzedDataProvider& fdp) {
  return fdp.ConsumeIntegralInRange<int>(0, 7) == 0;
}

std::optional<TensorView> maybe(FuzzedDataProvider& fdp, Arena& ar, const Shape& s, DType t,
                                bool* ok) {
  if (!fdp.ConsumeBool()) return std::nullopt;
  TensorView v;
  if (!ar.view(s, dtype_or_any(fdp, t), &v)) *ok = false;
  return v;
}

// Leading dims [0..3 extents] followed by `tail`.
Shape lead_plus(FuzzedDataProvider& fdp, std::initializer_list<int64_t> tail) {
  Shape s;
  for (int i = fdp.ConsumeIntegralInRange<int>(0, 3); i > 0; --i) s.push_back(extent(fdp, 4));
  s.insert(s.end(), tail);
  return s;
}

// A shape like `s`, or rarely with one extent changed or a dim dropped.
Shape like_or_off(FuzzedDataProvider& fdp, Shape s) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 23)) {
    case 0:
      if (!s.empty()) s[fdp.ConsumeIntegralInRange<size_t>(0, s.size() - 1)] = extent(fdp, 5);
      break;
    case 1:
      if (!s.empty()) s.pop_back();
      break;
    default: break;
  }
  return s;
}

// ---- chunk_loss ----

void fuzz_chunk_loss(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = train_dtype(fdp);
  const int64_t N = extent(fdp, 40), D = extent(fdp, 24), V = extent(fdp, 40);
  recops::ChunkLossBwdArgs a;
  // Labels mostly in [0, V) (every row must be valid for the call to run); ints() makes one in
  // 41 any int64 and one call in 16 raw bytes, and ignore_index may be -1 or a class.
  const DType lt = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::int32 : DType::int64, 16);
  a.ignore_index = fdp.ConsumeBool() ? -100 : size_arg(fdp, -1, std::max<int64_t>(V, 0));
  bool ok = ar.view(like_or_off(fdp, {N, D}), t, &a.hidden) &&
            ar.view(like_or_off(fdp, {V, D}), dtype_or_any(fdp, t, 16), &a.weight) &&
            ar.ints(like_or_off(fdp, {N}), lt, a.ignore_index == -1 ? -1 : 0,
                    std::clamp<int64_t>(V, 1, INT32_MAX) - 1, &a.labels);
  a.bias = maybe(fdp, ar, like_or_off(fdp, {V}), t, &ok);
  a.token_weight = maybe(fdp, ar, like_or_off(fdp, {N}), fdp.ConsumeBool() ? DType::fp32 : t, &ok);
  if (!ok) return;
  a.label_smoothing = real_arg(fdp, fdp.ConsumeBool() ? 0.0 : 0.1);
  a.z_loss_scale = real_arg(fdp, fdp.ConsumeBool() ? 0.0 : 1e-4);
  a.softcap = real_arg(fdp, fdp.ConsumeBool() ? 0.0 : 30.0);
  a.reduction = static_cast<recops::CeReduction>(fdp.ConsumeIntegralInRange<int>(0, 3));
  a.token_chunk = fdp.ConsumeBool() ? 0 : size_arg(fdp, 1, 50);
  a.vocab_chunk = fdp.ConsumeBool() ? 0 : size_arg(fdp, 1, 50);
  if (fdp.ConsumeIntegralInRange<int>(0, 2) == 0)
    a.accum_dtype = fdp.ConsumeBool() ? t : any_dtype(fdp);
  {  // the plan and the workspace sizes answer any arguments, valid or not
    recops::ChunkLossPlan plan;
    (void)recops::chunk_loss_plan(a, &plan);
  }
  Shape ls;
  DType st;
  if (!recops::chunk_loss_shape(a, &ls, &st).ok()) return;
  std::vector<uint8_t> ws;
  if (fdp.ConsumeBool()) {
    TensorView loss, zl;
    if (!ar.output(ls, st, &loss) || !ar.output(ls, st, &zl)) return;
    if (plain(fdp)) {
      (void)recops::chunk_loss_plain(a, loss, zl);
      return;
    }
    if (fdp.ConsumeIntegralInRange<int>(0, 2) == 0) {  // chunk_loss_fwd, with its gradients
      TensorView dh, dw, db;
      if (!ar.output(a.hidden.shape(), a.hidden.dtype, &dh) ||
          !ar.output(a.weight.shape(), a.weight.dtype, &dw) || !ar.output({V}, t, &db))
        return;
      // The gradients exactly when the rule asks for them, mostly; sometimes against it.
      bool grads = a.reduction != recops::CeReduction::none;
      if (fdp.ConsumeIntegralInRange<int>(0, 15) == 0) grads = !grads;
      const bool give_db = grads && a.bias.has_value() && fdp.ConsumeIntegralInRange<int>(0, 15);
      const size_t need = recops::chunk_loss_fwd_workspace_bytes(a);
      (void)recops::chunk_loss_fwd(a, loss, zl, grads ? &dh : nullptr, grads ? &dw : nullptr,
                                   give_db ? &db : nullptr, ctx_arg(fdp, need, &ws));
      return;
    }
    const size_t need = recops::chunk_loss_workspace_bytes(a);
    (void)recops::chunk_loss(a, loss, zl, ctx_arg(fdp, need, &ws));
    return;
  }
  a.want_dbias = fdp.ConsumeBool();
  TensorView dh, dw, db;
  if (!ar.view(like_or_off(fdp, ls), dtype_or_any(fdp, st, 16), &a.grad_loss) ||
      !ar.output(a.hidden.shape(), a.hidden.dtype, &dh) ||
      !ar.output(a.weight.shape(), a.weight.dtype, &dw) || !ar.output({V}, t, &db))
    return;
  // d_bias: exactly when wanted, mostly; sometimes given or left out against the rule.
  bool give_db = a.bias.has_value() && a.want_dbias;
  if (fdp.ConsumeIntegralInRange<int>(0, 15) == 0) give_db = !give_db;
  if (plain(fdp)) {
    (void)recops::chunk_loss_bwd_plain(a, dh, dw, give_db ? &db : nullptr);
    return;
  }
  const size_t need = recops::chunk_loss_bwd_workspace_bytes(a);
  (void)recops::chunk_loss_bwd(a, dh, dw, give_db ? &db : nullptr, ctx_arg(fdp, need, &ws));
}

// ---- inplace_rope_ ----

// x [B, L, H, Dh] or [T, H, Dh] (packed), sometimes with two of its leading dims transposed (the
// entry takes any strides but the last).
bool rope_x(FuzzedDataProvider& fdp, Arena& ar, const Shape& s, DType t, TensorView* x) {
  if (!ar.view(s, t, x)) return false;
  if (x->ndim >= 3 && fdp.ConsumeIntegralInRange<int>(0, 5) == 0) {
    const int i = fdp.ConsumeIntegralInRange<int>(0, x->ndim - 2);
    const int j = fdp.ConsumeIntegralInRange<int>(0, x->ndim - 2);
    std::swap(x->sizes[i], x->sizes[j]);
    std::swap(x->strides[i], x->strides[j]);
  }
  return true;
}

void fuzz_rope(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = train_dtype(fdp);
  const bool packed = fdp.ConsumeIntegralInRange<int>(0, 2) == 0;
  const int64_t B = extent(fdp, 3), L = extent(fdp, 12), H = extent(fdp, 4);
  const int64_t half = extent(fdp, 8);
  const int64_t Dh = fdp.ConsumeIntegralInRange<int>(0, 5) && half >= 0 && half < (int64_t{1} << 40)
                         ? 2 * half + fdp.ConsumeIntegralInRange<int64_t>(0, 6)
                         : extent(fdp, 20);
  const Shape xs = packed ? Shape{L, H, Dh} : Shape{B, L, H, Dh};
  TensorView x;
  if (!rope_x(fdp, ar, like_or_off(fdp, xs), t, &x)) return;
  // cos: [L, R/2], [B, L, R/2] (not packed) or [T, R/2], from x's own sizes after a transpose.
  Shape cs;
  if (x.ndim == 4 && fdp.ConsumeBool())
    cs = {x.sizes[0], x.sizes[1], half};
  else if (x.ndim >= 3)
    cs = {x.sizes[x.ndim == 4 ? 1 : 0], half};
  else
    cs = {L, half};
  const DType ct = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::fp32 : t, 16);
  TensorView cos, sin;
  if (!ar.view(like_or_off(fdp, cs), ct, &cos) ||
      !ar.view(like_or_off(fdp, cs), dtype_or_any(fdp, ct, 24), &sin))
    return;
  const bool inverse = fdp.ConsumeBool();
  std::vector<uint8_t> ws;
  if (fdp.ConsumeBool()) {
    recops::InplaceRopeArgs a{x, cos, sin, inverse};
    Shape os;
    (void)recops::inplace_rope_shape(a, &os);
    (void)recops::inplace_rope_(a, ctx_arg(fdp, 0, &ws));
    return;
  }
  recops::InplaceRopeBwdArgs a{x, cos, sin, inverse};
  TensorView dx;
  if (!ar.output(x.shape(), x.dtype, &dx)) return;
  (void)recops::inplace_rope_bwd(a, dx, ctx_arg(fdp, 0, &ws));
}

// ---- mhc_pre_bmm, mhc_post ----

DType coef_dtype(FuzzedDataProvider& fdp, DType x) {
  return dtype_or_any(fdp, x == DType::fp64 ? DType::fp64 : DType::fp32, 16);
}

// X [..., n, C] in *X, its leading dims in *lead.
bool streams(FuzzedDataProvider& fdp, Arena& ar, DType t, Shape* lead, int64_t* n, int64_t* C,
             TensorView* X) {
  *lead = lead_plus(fdp, {});
  *n = extent(fdp, 6);
  *C = extent(fdp, 40);
  Shape xs = *lead;
  xs.push_back(*n);
  xs.push_back(*C);
  return ar.view(like_or_off(fdp, xs), t, X);
}

Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

void fuzz_pre_bmm(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = train_dtype(fdp);
  Shape lead;
  int64_t n = 0, C = 0;
  TensorView X, h;
  if (!streams(fdp, ar, t, &lead, &n, &C, &X) ||
      !ar.view(like_or_off(fdp, with(lead, {n})), coef_dtype(fdp, t), &h))
    return;
  std::optional<DType> od;
  if (fdp.ConsumeBool()) od = dtype_or_any(fdp, train_dtype(fdp), 12);
  std::vector<uint8_t> ws;
  recops::MhcPreBmmArgs f{h, X, od};
  Shape ys;
  DType yt = DType::fp32;
  const bool shaped = recops::mhc_pre_bmm_shape(f, &ys, &yt).ok();
  if (!shaped) ys = with(lead, {C});
  if (fdp.ConsumeBool()) {
    TensorView y;
    if (!ar.output(ys, yt, &y)) return;
    (void)recops::mhc_pre_bmm(f, y, ctx_arg(fdp, 0, &ws));
    return;
  }
  recops::MhcPreBmmBwdArgs a{TensorView(), h, X, od};
  TensorView dh, dX;
  if (!ar.view(like_or_off(fdp, ys), dtype_or_any(fdp, yt, 16), &a.dy) ||
      !ar.output(h.shape(), h.dtype, &dh) || !ar.output(X.shape(), X.dtype, &dX))
    return;
  (void)recops::mhc_pre_bmm_bwd(a, dh, dX, ctx_arg(fdp, 0, &ws));
}

void fuzz_post(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = train_dtype(fdp);
  Shape lead;
  int64_t n = 0, C = 0;
  recops::MhcPostBwdArgs a;
  if (!streams(fdp, ar, t, &lead, &n, &C, &a.X)) return;
  const DType cd = coef_dtype(fdp, t);
  if (!ar.view(like_or_off(fdp, with(lead, {C})), dtype_or_any(fdp, t, 16), &a.y) ||
      !ar.view(like_or_off(fdp, with(lead, {n})), cd, &a.post) ||
      !ar.view(like_or_off(fdp, with(lead, {n, n})), dtype_or_any(fdp, cd, 16), &a.comb))
    return;
  a.comb_layout = static_cast<recops::MhcCombLayout>(fdp.ConsumeIntegralInRange<int>(0, 15)
                                                         ? fdp.ConsumeIntegralInRange<int64_t>(0, 1)
                                                         : fdp.ConsumeIntegral<int64_t>());
  std::vector<uint8_t> ws;
  if (fdp.ConsumeBool()) {
    const recops::MhcPostArgs f{a.X, a.y, a.post, a.comb, a.comb_layout};
    Shape os;
    (void)recops::mhc_post_shape(f, &os);
    TensorView out;
    if (!ar.output(a.X.shape(), a.X.dtype, &out)) return;
    (void)recops::mhc_post(f, out, ctx_arg(fdp, 0, &ws));
    return;
  }
  TensorView dX, dy, dpost, dcomb;
  if (!ar.view(like_or_off(fdp, a.X.shape()), dtype_or_any(fdp, t, 16), &a.dout) ||
      !ar.output(a.X.shape(), a.X.dtype, &dX) || !ar.output(a.y.shape(), a.y.dtype, &dy) ||
      !ar.output(a.post.shape(), a.post.dtype, &dpost) ||
      !ar.output(a.comb.shape(), a.comb.dtype, &dcomb))
    return;
  (void)recops::mhc_post_bwd(a, dX, dy, dpost, dcomb, ctx_arg(fdp, 0, &ws));
}

// ---- mhc_sinkhorn ----

void fuzz_sinkhorn(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::fp32 : DType::fp64);
  const int64_t n = extent(fdp, 8);
  Shape ls = lead_plus(fdp, {n, n});
  if (fdp.ConsumeIntegralInRange<int>(0, 23) == 0) ls.back() = extent(fdp, 8);  // not square
  TensorView logits;
  if (!ar.view(like_or_off(fdp, ls), t, &logits)) return;
  int64_t iters = fdp.ConsumeIntegralInRange<int>(0, 7) ? fdp.ConsumeIntegralInRange<int64_t>(1, 30)
                                                        : size_arg(fdp, 1, 30);
  if (fdp.ConsumeIntegralInRange<int>(0, 31) == 0)
    iters = 65536 + fdp.ConsumeIntegralInRange(-1, 1);
  // The work is iters · numel (the backward also keeps 2·iters matrices per thread): a legal but
  // large product is the op's cost, not a finding, so the harness keeps it bounded.
  const int64_t elems = logits.numel();
  // (65535 iterations of 3 tokens of 2 x 2 took 3 s under the sanitizers: found_harness_*.)
  if (iters > 30 && elems > 0 && TensorView::mul_sat(iters, elems) > (int64_t{1} << 18))
    iters = 1 + iters % 30;
  const double eps = real_arg(fdp, 1e-6);
  std::vector<uint8_t> ws;
  if (fdp.ConsumeBool()) {
    const recops::MhcSinkhornArgs a{logits, iters, eps};
    Shape ps;
    (void)recops::mhc_sinkhorn_shape(a, &ps);
    TensorView P;
    if (!ar.output(logits.shape(), logits.dtype, &P)) return;
    (void)recops::mhc_sinkhorn(a, P, ctx_arg(fdp, 0, &ws));
    return;
  }
  recops::MhcSinkhornBwdArgs a{TensorView(), logits, iters, eps};
  TensorView dl;
  if (!ar.view(like_or_off(fdp, logits.shape()), dtype_or_any(fdp, t, 16), &a.dP) ||
      !ar.output(logits.shape(), logits.dtype, &dl))
    return;
  (void)recops::mhc_sinkhorn_bwd(a, dl, ctx_arg(fdp, 0, &ws));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  try {
    switch (fdp.ConsumeIntegralInRange<int>(0, 4)) {
      case 0: fuzz_chunk_loss(fdp); break;
      case 1: fuzz_rope(fdp); break;
      case 2: fuzz_pre_bmm(fdp); break;
      case 3: fuzz_post(fdp); break;
      default: fuzz_sinkhorn(fdp); break;
    }
  } catch (const recops::Error&) {
    // Tensor::empty refusing a size is the harness's limit, not a finding.
  }
  return 0;
}
