// training/mhc_pre_bmm/cuda/launch.cu: cuda_sm80. The forward is one mix launch (y = Σ_i h_i·X_i,
// X's dtype in, y's dtype out); the backward a mix launch for dX_i = h_i·dy and a gram launch for
// dh_pre_i = <dy, X_i> (a per-token sum over C, deterministic, no atomics). fp64 arithmetic for
// every dtype as cpu_generic (README); the kernels are in common/cuda/mhc_mix.cuh. X's and y's
// dtypes are independent (16 pairs).
#include <cstdint>

#include "ops/training/common/cuda/mhc_mix.cuh"
#include "ops/training/mhc_pre_bmm/impls.h"

namespace recops::ops::mhc_pre_bmm_ns {
namespace {
using training::mhc_cuda::Coef;
using training::mhc_cuda::GramArgs;
using training::mhc_cuda::launch_gram;
using training::mhc_cuda::launch_mix;
using training::mhc_cuda::MixArgs;

// T: X's dtype; Y: y's (and dy's).
template <class T, class Y>
Status run_typed(const Params& p, void* stream) {
  const bool f64 = p.coef_dtype == DType::fp64;
  const int64_t n = p.n, C = p.C;
  if (!p.backward) {
    // y = Σ_i h_i·X_i (n = 0: zeros).
    MixArgs a;
    a.S = p.X;
    a.s_tok = n * C;
    a.n_in = n;
    a.M = Coef{p.h_pre, f64, n, 1, 0};
    a.out = p.y;
    a.out_tok = C;
    a.n_out = 1;
    a.tokens = p.tokens;
    a.C = C;
    return launch_mix<T, Y>("mhc_pre_bmm", a, stream);
  }
  // dX_i = h_i·dy: one input (dy), n outputs.
  MixArgs x;
  x.S = p.dy;
  x.s_tok = C;
  x.n_in = 1;
  x.M = Coef{p.h_pre, f64, n, 0, 1};
  x.out = p.dX;
  x.out_tok = n * C;
  x.n_out = n;
  x.tokens = p.tokens;
  x.C = C;
  RECOPS_RETURN_IF_ERROR((launch_mix<Y, T>("mhc_pre_bmm_bwd", x, stream)));
  // dh_pre_i = <X_i, dy> (C = 0: zeros).
  GramArgs g;
  g.A = p.X;
  g.a_tok = n * C;
  g.n_a = n;
  g.B = p.dy;
  g.b_tok = C;
  g.n_b = 1;
  g.G = p.dh_pre;
  g.g_tok = n;
  g.g_sa = 1;
  g.g_sb = 0;
  g.g_f64 = f64;
  g.tokens = p.tokens;
  g.C = C;
  return launch_gram<T, Y>("mhc_pre_bmm_bwd", g, stream);
}

template <class T>
Status run_y(const Params& p, void* stream) {
  switch (p.y_dtype) {
    case DType::fp64: return run_typed<T, double>(p, stream);
    case DType::fp32: return run_typed<T, float>(p, stream);
    case DType::fp16: return run_typed<T, __half>(p, stream);
    case DType::bf16: return run_typed<T, __nv_bfloat16>(p, stream);
    default:
      return Status(StatusCode::internal, "mhc_pre_bmm: cuda_sm80 reached with a bad y dtype");
  }
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.x_dtype) {
    case DType::fp64: return run_y<double>(p, ctx.stream);
    case DType::fp32: return run_y<float>(p, ctx.stream);
    case DType::fp16: return run_y<__half>(p, ctx.stream);
    case DType::bf16: return run_y<__nv_bfloat16>(p, ctx.stream);
    default: return Status(StatusCode::internal, "mhc_pre_bmm: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::mhc_pre_bmm_ns
