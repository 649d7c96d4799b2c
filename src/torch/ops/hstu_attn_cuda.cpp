// hstu_attn_fwd / hstu_attn_bwd, CUDA kernels: device guard and torch's current stream, then the
// same allocation and entry calls as the CPU file. No host synchronisation here (max lengths are
// arguments); data checks on CUDA tensors follow recops::validate_enabled and are skipped while
// the stream is capturing a graph.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "torch/cuda_context.h"
#include "torch/ops/hstu_attn_common.h"

namespace recops::binding {
namespace {

at::Tensor hstu_attn_fwd_cuda(RECOPS_HSTU_ARGS_DECL) {
  constexpr const char* kOp = "hstu_attn_fwd";
  const c10::cuda::CUDAGuard guard(q.device());
  const HstuAttnArgs a = hstu_args(kOp, RECOPS_HSTU_ARGS_PASS);
  Shape shape;  // like q with dv last
  check(hstu_attn_fwd_shape(a, &shape));
  at::Tensor out = new_output(shape, q.options());
  check(hstu_attn_fwd(a, to_view(out, kOp, "out"), cuda_context(q)));
  return out;
}

HstuGrads hstu_attn_bwd_cuda(const at::Tensor& dout_in, RECOPS_HSTU_ARGS_DECL, bool want_drab) {
  constexpr const char* kOp = "hstu_attn_bwd";
  const c10::cuda::CUDAGuard guard(q.device());
  const HstuAttnArgs a = hstu_args(kOp, RECOPS_HSTU_ARGS_PASS);
  Shape sq, sk, sv, sr;
  check(hstu_attn_bwd_shape(a, &sq, &sk, &sv, &sr));
  const at::Tensor dout = dense_from(dout_in, dout_in.dim() - 1);
  at::Tensor dq = new_output(sq, q.options()), dk = new_output(sk, k.options());
  at::Tensor dv = new_output(sv, v.options());
  const bool with_drab = want_drab && rab.has_value() && rab->defined();
  at::Tensor drab = with_drab ? new_output(sr, rab->options()) : at::empty({0}, q.options());
  const TensorView drab_view = with_drab ? to_view(drab, kOp, "drab") : TensorView{};
  check(hstu_attn_bwd(to_view(dout, kOp, "dout"), a, to_view(dq, kOp, "dq"), to_view(dk, kOp, "dk"),
                      to_view(dv, kOp, "dv"), with_drab ? &drab_view : nullptr, cuda_context(q)));
  return {dq, dk, dv, drab};
}

}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CUDA, m) {
  m.impl("hstu_attn_fwd", TORCH_FN(recops::binding::hstu_attn_fwd_cuda));
  m.impl("hstu_attn_bwd", TORCH_FN(recops::binding::hstu_attn_bwd_cuda));
}
