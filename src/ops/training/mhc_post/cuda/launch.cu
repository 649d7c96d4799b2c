// training/mhc_post/cuda/launch.cu: cuda_sm80. The forward is one mix launch (out_j = post_j·y +
// Σ_i w[i, j]·X_i); the backward three: mix for dy (Σ_j post_j·dout_j), mix for dX
// (Σ_j w[i, j]·dout_j) and gram for the per-token sums over C (dcomb at w[i, j]'s place =
// <X_i, dout_j>, dpost_j = <y, dout_j>), deterministic, no atomics. fp64 arithmetic for every
// dtype as cpu_generic (README); the kernels are in common/cuda/mhc_mix.cuh.
#include <cstdint>

#include "ops/training/common/cuda/mhc_mix.cuh"
#include "ops/training/mhc_post/impls.h"

namespace recops::ops::mhc_post_ns {
namespace {
using training::mhc_cuda::Coef;
using training::mhc_cuda::GramArgs;
using training::mhc_cuda::launch_gram;
using training::mhc_cuda::launch_mix;
using training::mhc_cuda::MixArgs;

template <class T>
Status run_typed(const Params& p, void* stream) {
  const bool f64 = p.coef_dtype == DType::fp64;
  const int64_t n = p.n, C = p.C;
  // w[i, j] (stream i to stream j) at comb + t·n² + i·n + j (in_out) or + j·n + i (out_in).
  const int64_t wi = p.out_in ? 1 : n, wj = p.out_in ? n : 1;
  if (!p.backward) {
    MixArgs a;
    a.S = p.X;
    a.s_tok = n * C;
    a.n_in = n;
    a.v = p.y;
    a.v_tok = C;
    a.a = Coef{p.post, f64, n, 0, 1};
    a.M = Coef{p.comb, f64, n * n, wi, wj};
    a.out = p.out;
    a.out_tok = n * C;
    a.n_out = n;
    a.tokens = p.tokens;
    a.C = C;
    return launch_mix<T, T>("mhc_post", a, stream);
  }
  // dy = Σ_j post_j·dout_j (n = 0: zeros).
  MixArgs d;
  d.S = p.dout;
  d.s_tok = n * C;
  d.n_in = n;
  d.M = Coef{p.post, f64, n, 1, 0};
  d.out = p.dy;
  d.out_tok = C;
  d.n_out = 1;
  d.tokens = p.tokens;
  d.C = C;
  RECOPS_RETURN_IF_ERROR((launch_mix<T, T>("mhc_post_bwd", d, stream)));
  // dX_i = Σ_j w[i, j]·dout_j: input j, output i.
  MixArgs x = d;
  x.M = Coef{p.comb, f64, n * n, wj, wi};
  x.out = p.dX;
  x.out_tok = n * C;
  x.n_out = n;
  RECOPS_RETURN_IF_ERROR((launch_mix<T, T>("mhc_post_bwd", x, stream)));
  // dcomb at w[i, j]'s place = <X_i, dout_j>; dpost_j = <y, dout_j> (the extra A row).
  GramArgs g;
  g.A = p.X;
  g.a_tok = n * C;
  g.n_a = n;
  g.A2 = p.y;
  g.a2_tok = C;
  g.B = p.dout;
  g.b_tok = n * C;
  g.n_b = n;
  g.G = p.dcomb;
  g.g_tok = n * n;
  g.g_sa = wi;
  g.g_sb = wj;
  g.G2 = p.dpost;
  g.g2_tok = n;
  g.g2_sb = 1;
  g.g_f64 = f64;
  g.tokens = p.tokens;
  g.C = C;
  return launch_gram<T, T>("mhc_post_bwd", g, stream);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp64: return run_typed<double>(p, ctx.stream);
    case DType::fp32: return run_typed<float>(p, ctx.stream);
    case DType::fp16: return run_typed<__half>(p, ctx.stream);
    case DType::bf16: return run_typed<__nv_bfloat16>(p, ctx.stream);
    default: return Status(StatusCode::internal, "mhc_post: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::mhc_post_ns
