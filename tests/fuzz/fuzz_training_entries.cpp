// tests/fuzz/fuzz_training_entries.cpp: the training ops' public C++ entries (forward and
// backward) on the CPU, with shapes, strides, dtypes, flags, scalars and workspaces derived from
// the fuzz input. Each call must return an error Status or run; a crash or a sanitizer report is
// a finding.
#include <algorithm>

#include "fuzz_util.h"
#include "ops/training/causal_conv1d/causal_conv1d.h"
#include "ops/training/clipped_swiglu/clipped_swiglu.h"
#include "ops/training/fused_cross_entropy/fused_cross_entropy.h"
#include "ops/training/l2norm/l2norm.h"
#include "ops/training/layer_norm/layer_norm.h"
#include "ops/training/norm_mul_dropout/norm_mul_dropout.h"
#include "ops/training/rms_norm/rms_norm.h"
#include "ops/training/rms_norm_gated/rms_norm_gated.h"
#include "ops/training/sort_chunks_by_idx/sort_chunks_by_idx.h"

namespace {

using namespace recops_fuzz;
using recops::DType;

// [..., D] with 0..3 leading dims; D sometimes extreme (with a zero row count).
recops::Shape rows_shape(FuzzedDataProvider& fdp, int64_t D) {
  recops::Shape s;
  const int lead = fdp.ConsumeIntegralInRange<int>(0, 3);
  for (int i = 0; i < lead; ++i)
    s.push_back(fdp.ConsumeIntegralInRange<int>(0, 9) ? fdp.ConsumeIntegralInRange<int64_t>(0, 9)
                                                      : size_arg(fdp, 0, 9));
  s.push_back(D);
  return s;
}

int64_t width(FuzzedDataProvider& fdp) {
  return fdp.ConsumeIntegralInRange<int>(0, 9) ? fdp.ConsumeIntegralInRange<int64_t>(0, 70)
                                               : size_arg(fdp, 0, 70);
}

// A context with a workspace of about `need` bytes (sometimes too small), its buffer in *ws.
recops::Context ctx_arg(FuzzedDataProvider& fdp, size_t need, std::vector<uint8_t>* ws) {
  recops::Context ctx;
  ctx.impl = impl_arg(fdp, {"reference", "cpu_generic"});
  ctx.num_threads = fdp.ConsumeIntegralInRange<int>(0, 3);
  size_t give = need;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) give = need > 0 ? need - 1 : 0;
  if (give > (size_t{1} << 24)) return ctx;  // beyond the harness's memory: none given
  ws->assign(give, 0);
  ctx.workspace = give ? ws->data() : nullptr;
  ctx.workspace_bytes = give;
  return ctx;
}

std::optional<TensorView> maybe(FuzzedDataProvider& fdp, Arena& ar, const recops::Shape& s, DType t,
                                bool* ok) {
  if (!fdp.ConsumeBool()) return std::nullopt;
  TensorView v;
  if (!ar.view(s, dtype_or_any(fdp, t), &v)) *ok = false;
  return v;
}

void fuzz_norms(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = train_dtype(fdp);
  const int64_t D = width(fdp);
  const recops::Shape xs = rows_shape(fdp, D);
  TensorView x, g, z, y, dx, dz, dw, db;
  bool ok = ar.view(xs, t, &x) && ar.view(xs, dtype_or_any(fdp, t), &g) &&
            ar.view(xs, dtype_or_any(fdp, t), &z);
  const std::optional<TensorView> w = maybe(fdp, ar, {D}, t, &ok);
  const std::optional<TensorView> b = maybe(fdp, ar, {D}, t, &ok);
  if (!ok || !ar.output(xs, t, &y) || !ar.output(xs, t, &dx) || !ar.output(xs, t, &dz) ||
      !ar.output({D}, t, &dw) || !ar.output({D}, t, &db))
    return;
  const double eps = real_arg(fdp, 1e-5);
  std::vector<uint8_t> ws;
  switch (fdp.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: {
      recops::LayerNormArgs a{x, w, b, eps};
      (void)(fdp.ConsumeBool() ? recops::layer_norm(a, y, ctx_arg(fdp, 0, &ws))
                               : recops::swish_layer_norm(a, y, ctx_arg(fdp, 0, &ws)));
      break;
    }
    case 1: {
      recops::LayerNormBwdArgs a;
      a.grad_y = g;
      a.x = x;
      a.weight = w;
      a.bias = b;
      a.eps = eps;
      a.want_dweight = fdp.ConsumeBool();
      a.want_dbias = fdp.ConsumeBool();
      const recops::Context ctx = ctx_arg(fdp, recops::layer_norm_bwd_workspace_bytes(a), &ws);
      (void)(fdp.ConsumeBool() ? recops::layer_norm_bwd(a, dx, &dw, &db, ctx)
                               : recops::swish_layer_norm_bwd(a, dx, &dw, &db, ctx));
      break;
    }
    case 2: {
      recops::RmsNormArgs a{x, w, eps, real_arg(fdp, 0.0)};
      (void)recops::rms_norm(a, y, ctx_arg(fdp, 0, &ws));
      break;
    }
    case 3: {
      recops::RmsNormBwdArgs a{g, x, w, eps, real_arg(fdp, 0.0), fdp.ConsumeBool()};
      (void)recops::rms_norm_bwd(a, dx, &dw,
                                 ctx_arg(fdp, recops::rms_norm_bwd_workspace_bytes(a), &ws));
      break;
    }
    case 4: {
      recops::RmsNormRstdArgs a{x, eps, std::nullopt};
      if (fdp.ConsumeBool()) a.out_dtype = any_dtype(fdp);
      recops::Shape rs;
      DType rt;
      TensorView r;
      if (!recops::rms_norm_rstd_shape(a, &rs, &rt).ok() || !ar.output(rs, rt, &r)) return;
      if (fdp.ConsumeBool()) {
        (void)recops::rms_norm_rstd(a, r, ctx_arg(fdp, 0, &ws));
      } else {
        recops::RmsNormRstdBwdArgs bw{r, x, eps, a.out_dtype};
        (void)recops::rms_norm_rstd_bwd(bw, dx, ctx_arg(fdp, 0, &ws));
      }
      break;
    }
    case 5:
    case 6: {
      recops::RmsNormGatedArgs a;
      a.x = x;
      a.z = z;
      a.weight = w;
      a.bias = b;
      a.eps = eps;
      a.activation = static_cast<recops::GateActivation>(fdp.ConsumeIntegralInRange<int>(0, 3));
      a.group_size = fdp.ConsumeBool() ? 0 : size_arg(fdp, 0, 16);
      a.norm_before_gate = fdp.ConsumeBool();
      if (fdp.ConsumeBool()) {
        (void)recops::rms_norm_gated(a, y, ctx_arg(fdp, 0, &ws));
        break;
      }
      recops::RmsNormGatedBwdArgs bw;
      bw.grad_y = g;
      bw.x = x;
      bw.z = z;
      bw.weight = w;
      bw.bias = b;
      bw.eps = eps;
      bw.activation = a.activation;
      bw.group_size = a.group_size;
      bw.norm_before_gate = a.norm_before_gate;
      bw.want_dweight = fdp.ConsumeBool();
      bw.want_dbias = fdp.ConsumeBool();
      const recops::Context ctx = ctx_arg(fdp, recops::rms_norm_gated_bwd_workspace_bytes(bw), &ws);
      (void)recops::rms_norm_gated_bwd(bw, dx, dz, &dw, &db, ctx);
      break;
    }
    case 7: {
      recops::L2normArgs a{x, eps, std::nullopt};
      if (fdp.ConsumeBool()) a.out_dtype = any_dtype(fdp);
      if (fdp.ConsumeBool()) {
        (void)recops::l2norm(a, y, ctx_arg(fdp, 0, &ws));
      } else {
        recops::L2normBwdArgs bw{g, x, eps, a.out_dtype};
        (void)recops::l2norm_bwd(bw, dx, ctx_arg(fdp, 0, &ws));
      }
      break;
    }
    default: {  // norm_mul_dropout over x, u = z
      recops::NormMulDropoutBwdArgs a;
      a.grad_out = g;
      a.x = x;
      a.u = z;
      const int64_t W = fdp.ConsumeBool() ? D : fdp.ConsumeIntegralInRange<int64_t>(0, 8);
      if (!ar.view({W}, dtype_or_any(fdp, t), &a.weight) ||
          !ar.view({W}, dtype_or_any(fdp, t), &a.bias))
        return;
      a.eps = eps;
      a.dropout_ratio = real_arg(fdp, fdp.ConsumeBool() ? 0.0 : 0.3);
      a.training = fdp.ConsumeBool();
      a.concat_ux = fdp.ConsumeBool();
      a.group_norm = fdp.ConsumeBool();
      a.num_heads = size_arg(fdp, 1, 4);
      a.linear_dim = size_arg(fdp, -1, 16);
      a.seed = fdp.ConsumeIntegral<int64_t>();
      a.offset = fdp.ConsumeIntegral<int64_t>();
      recops::NormMulDropoutArgs f;
      f.x = x;
      f.u = z;
      f.weight = a.weight;
      f.bias = a.bias;
      f.eps = eps;
      f.dropout_ratio = a.dropout_ratio;
      f.training = a.training;
      f.concat_ux = a.concat_ux;
      f.group_norm = a.group_norm;
      f.num_heads = a.num_heads;
      f.linear_dim = a.linear_dim;
      f.seed = a.seed;
      f.offset = a.offset;
      recops::Shape os;
      TensorView out;
      if (!recops::norm_mul_dropout_shape(f, &os).ok() || !ar.output(os, t, &out)) return;
      if (fdp.ConsumeBool()) {
        (void)recops::norm_mul_dropout(f, out, ctx_arg(fdp, 0, &ws));
        break;
      }
      a.grad_out = out;  // the forward output's shape, with input bytes
      TensorView du;
      if (!ar.output(xs, t, &du)) return;
      const recops::Context ctx =
          ctx_arg(fdp, recops::norm_mul_dropout_bwd_workspace_bytes(a), &ws);
      (void)recops::norm_mul_dropout_bwd(a, dx, du, dw, db, ctx);
      break;
    }
  }
}

void fuzz_swiglu(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = train_dtype(fdp);
  const int64_t I = width(fdp);
  recops::ClippedSwigluBwdArgs a;
  const recops::Shape xs =
      rows_shape(fdp, fdp.ConsumeIntegralInRange<int>(0, 7) ? TensorView::mul_sat(2, I) : I);
  if (!ar.view(xs, t, &a.x)) return;
  a.alpha = real_arg(fdp, 1.702);
  a.limit = real_arg(fdp, 7.0);
  a.linear_offset = real_arg(fdp, 1.0);
  a.interleaved = fdp.ConsumeBool();
  recops::Shape ys;
  if (!recops::clipped_swiglu_shape(a, &ys).ok()) return;
  std::vector<uint8_t> ws;
  TensorView y;
  if (fdp.ConsumeBool()) {
    if (!ar.output(ys, t, &y)) return;
    (void)recops::clipped_swiglu(a, y, ctx_arg(fdp, 0, &ws));
    return;
  }
  TensorView dx;
  if (!ar.view(ys, dtype_or_any(fdp, t), &a.dy) || !ar.output(xs, t, &dx)) return;
  (void)recops::clipped_swiglu_bwd(a, dx, ctx_arg(fdp, 0, &ws));
}

void fuzz_cross_entropy(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = train_dtype(fdp);
  const int64_t N = fdp.ConsumeIntegralInRange<int>(0, 9)
                        ? fdp.ConsumeIntegralInRange<int64_t>(0, 40)
                        : size_arg(fdp, 0, 40);
  const int64_t V = width(fdp);
  recops::FusedCrossEntropyArgs a;
  a.ignore_index = fdp.ConsumeBool() ? -100 : size_arg(fdp, -1, std::max<int64_t>(V, -1));
  a.label_smoothing = real_arg(fdp, 0.0);
  a.z_loss_scale = real_arg(fdp, 0.0);
  a.softcap = real_arg(fdp, 0.0);
  a.reduction = static_cast<recops::CeReduction>(fdp.ConsumeIntegralInRange<int>(0, 3));
  const DType lt = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::int32 : DType::int64);
  bool ok = ar.view({N, V}, t, &a.logits) &&
            ar.ints({N}, lt, -101, std::min<int64_t>(V, INT32_MAX) + 1, &a.labels);
  a.weight = maybe(fdp, ar, {N}, DType::fp32, &ok);
  if (!ok) return;
  recops::Shape ls;
  DType st;
  if (!recops::fused_cross_entropy_shape(a, &ls, &st).ok()) return;
  TensorView loss, zl, lse, grad;
  if (!ar.output(ls, st, &loss) || !ar.output(ls, st, &zl) || !ar.output({N}, DType::fp32, &lse))
    return;
  std::vector<uint8_t> ws;
  switch (fdp.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: {
      a.precompute_grad = fdp.ConsumeBool();
      a.inplace = fdp.ConsumeBool();
      (void)recops::fused_cross_entropy(
          a, loss, zl, ctx_arg(fdp, recops::fused_cross_entropy_workspace_bytes(a, false), &ws));
      break;
    }
    case 1:
      (void)recops::fused_cross_entropy_fwd(
          a, loss, zl, lse,
          ctx_arg(fdp, recops::fused_cross_entropy_workspace_bytes(a, true), &ws));
      break;
    default: {
      recops::FusedCrossEntropyBwdArgs b;
      static_cast<recops::CeScalars&>(b) = a;
      b.grad_loss = loss;
      b.logits = a.logits;
      b.labels = a.labels;
      b.weight = a.weight;
      b.lse = lse;
      if (!ar.output({N, V}, t, &grad)) return;
      (void)recops::fused_cross_entropy_bwd(
          b, grad, ctx_arg(fdp, recops::fused_cross_entropy_bwd_workspace_bytes(b), &ws));
      break;
    }
  }
}

void fuzz_conv(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const DType t = train_dtype(fdp);
  const int64_t B = fdp.ConsumeIntegralInRange<int64_t>(0, 3);
  const int64_t D = width(fdp);
  const int64_t T = fdp.ConsumeIntegralInRange<int>(0, 9)
                        ? fdp.ConsumeIntegralInRange<int64_t>(0, 40)
                        : size_arg(fdp, 0, 40);
  const int64_t W = fdp.ConsumeIntegralInRange<int>(0, 7)
                        ? fdp.ConsumeIntegralInRange<int64_t>(0, 5)
                        : size_arg(fdp, 0, 5);
  recops::CausalConv1dBwdArgs a;
  a.weight_layout = static_cast<recops::ConvWeightLayout>(fdp.ConsumeIntegralInRange<int>(0, 2));
  a.activation = static_cast<recops::ConvActivation>(fdp.ConsumeIntegralInRange<int>(0, 3));
  a.state_len = fdp.ConsumeBool() ? 0 : size_arg(fdp, 0, 6);
  a.output_final_state = fdp.ConsumeBool();
  bool ok = ar.view({B, D, T}, t, &a.x) &&
            ar.view(a.weight_layout == recops::ConvWeightLayout::WD ? recops::Shape{W, D}
                                                                    : recops::Shape{D, W},
                    dtype_or_any(fdp, t), &a.weight);
  a.bias = maybe(fdp, ar, {D}, t, &ok);
  a.residual = maybe(fdp, ar, {B, D, T}, t, &ok);
  const int64_t S = a.state_len > 0 && a.state_len < 8 ? a.state_len : (W > 1 && W < 8 ? W - 1 : 0);
  int64_t nseq = B;
  TensorView tmp;
  switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: {
      const DType it = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::int32 : DType::int64);
      ok = ok && ar.ints({B, T}, it, -1, 4, &tmp);
      a.seq_idx = tmp;
      break;
    }
    case 1: {
      int64_t last = 0, longest = 0;
      nseq = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
      const DType it = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::int32 : DType::int64);
      ok = ok && ar.offsets(nseq, it, std::min<int64_t>(T, INT32_MAX) / (nseq > 0 ? nseq : 1) + 1,
                            &tmp, &last, &longest);
      a.seq_offsets = tmp;
      break;
    }
    default: break;
  }
  a.initial_state = maybe(fdp, ar, {nseq, D, S}, fdp.ConsumeBool() ? t : DType::fp32, &ok);
  if (!ok) return;
  recops::CausalConv1dArgs f;
  f.x = a.x;
  f.weight = a.weight;
  f.bias = a.bias;
  f.initial_state = a.initial_state;
  f.output_final_state = a.output_final_state;
  f.activation = a.activation;
  f.seq_idx = a.seq_idx;
  f.seq_offsets = a.seq_offsets;
  f.residual = a.residual;
  f.weight_layout = a.weight_layout;
  f.state_len = a.state_len;
  recops::Shape ys, ss;
  DType sdt;
  if (!recops::causal_conv1d_shape(f, &ys, &ss, &sdt).ok()) return;
  TensorView y, fs;
  if (!ar.output(ys, t, &y) || !ar.output(ss, sdt, &fs)) return;
  std::vector<uint8_t> ws;
  if (fdp.ConsumeBool()) {
    (void)recops::causal_conv1d(f, y, f.output_final_state ? &fs : nullptr, ctx_arg(fdp, 0, &ws));
    return;
  }
  a.grad_y = y;  // the output's shape, with input bytes
  a.grad_final_state = fs;
  a.want_dbias = fdp.ConsumeBool();
  a.want_dinitial_state = fdp.ConsumeBool();
  a.want_dresidual = fdp.ConsumeBool();
  TensorView dx, dw, db, dis, dres;
  if (!ar.output(a.x.shape(), t, &dx) || !ar.output(a.weight.shape(), a.weight.dtype, &dw) ||
      !ar.output({D}, t, &db) || !ar.output(ss, sdt, &dis) || !ar.output({B, D, T}, t, &dres))
    return;
  const recops::Context ctx = ctx_arg(fdp, recops::causal_conv1d_bwd_workspace_bytes(a), &ws);
  (void)recops::causal_conv1d_bwd(a, dx, dw, fdp.ConsumeBool() ? &db : nullptr,
                                  fdp.ConsumeBool() ? &dis : nullptr,
                                  fdp.ConsumeBool() ? &dres : nullptr, ctx);
}

void fuzz_sort_chunks(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  const int64_t C = fdp.ConsumeIntegralInRange<int64_t>(0, 8);
  const DType it = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::int32 : DType::int64);
  TensorView split, idx, in, out, probs, pout;
  int64_t T = 0;
  if (!ar.ints({C}, it, 0, 9, &split) || !ar.ints({C}, it, -1, C, &idx)) return;
  if (it == DType::int32 || it == DType::int64) {  // T = Σ split most of the time
    for (int64_t i = 0; i < C; ++i) {
      const int64_t off_i = i * split.strides[0];
      const int64_t x =
          it == DType::int64 ? split.ptr<int64_t>()[off_i] : split.ptr<int32_t>()[off_i];
      if (__builtin_add_overflow(T, x, &T)) T = -1;  // replaced below
    }
  }
  if (T < 0 || T > 4096 || fdp.ConsumeIntegralInRange<int>(0, 7) == 0)
    T = fdp.ConsumeIntegralInRange<int64_t>(0, 60);
  recops::Shape s = {T};
  for (int i = fdp.ConsumeIntegralInRange<int>(0, 2); i > 0; --i)
    s.push_back(fdp.ConsumeIntegralInRange<int64_t>(0, 6));
  const DType t = any_dtype(fdp);
  if (!ar.view(s, t, &in) || !ar.output(s, t, &out) || !ar.view({T}, train_dtype(fdp), &probs) ||
      !ar.output({T}, probs.dtype, &pout))
    return;
  std::vector<uint8_t> ws;
  const bool with_probs = fdp.ConsumeBool();
  const recops::Context ctx =
      ctx_arg(fdp, recops::sort_chunks_by_idx_workspace_bytes(in, split), &ws);
  if (fdp.ConsumeBool()) {
    recops::SortChunksByIdxArgs a{in, split, idx, std::nullopt};
    if (with_probs) a.probs = probs;
    (void)recops::sort_chunks_by_idx(a, out, with_probs ? &pout : nullptr, ctx);
  } else {
    recops::SortChunksByIdxBwdArgs a{in, split, idx, std::nullopt};
    if (with_probs) a.grad_probs = probs;
    (void)recops::sort_chunks_by_idx_bwd(a, out, with_probs ? &pout : nullptr, ctx);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  try {
    switch (fdp.ConsumeIntegralInRange<int>(0, 4)) {
      case 0: fuzz_norms(fdp); break;
      case 1: fuzz_swiglu(fdp); break;
      case 2: fuzz_cross_entropy(fdp); break;
      case 3: fuzz_conv(fdp); break;
      default: fuzz_sort_chunks(fdp); break;
    }
  } catch (const recops::Error&) {
    // Tensor::empty refusing a size is the harness's limit, not a finding.
  }
  return 0;
}
