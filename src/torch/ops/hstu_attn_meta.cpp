// hstu_attn_fwd / hstu_attn_bwd, Meta kernels: output shapes only, from the public shape
// functions (the same ones the CPU kernels allocate with). Sizes must be concrete (eager meta
// tensors, static compile); symbolic sizes are specialised by the views.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "torch/ops/hstu_attn_common.h"

namespace recops::binding {
namespace {

at::Tensor hstu_attn_fwd_meta(RECOPS_HSTU_ARGS_DECL) {
  const HstuAttnArgs a = hstu_args("hstu_attn_fwd", RECOPS_HSTU_ARGS_PASS);
  Shape shape;
  check(hstu_attn_fwd_shape(a, &shape));
  return new_output(shape, q.options());
}

HstuGrads hstu_attn_bwd_meta(const at::Tensor& dout, RECOPS_HSTU_ARGS_DECL, bool want_drab) {
  const HstuAttnArgs a = hstu_args("hstu_attn_bwd", RECOPS_HSTU_ARGS_PASS);
  Shape sq, sk, sv, sr;
  check(hstu_attn_bwd_shape(a, &sq, &sk, &sv, &sr));
  const bool with_drab = want_drab && rab.has_value() && rab->defined();
  return {new_output(sq, q.options()), new_output(sk, k.options()), new_output(sv, v.options()),
          with_drab ? new_output(sr, rab->options()) : at::empty({0}, q.options())};
}

at::Tensor hstu_mask_meta(RECOPS_HSTU_ARGS_DECL, int64_t seq, int64_t head) {
  Shape shape;
  check(hstu_attn_fwd_shape(hstu_args("hstu_mask", RECOPS_HSTU_ARGS_PASS), &shape));
  return at::empty({max_seq_len_q, max_seq_len_k}, q.options().dtype(at::kBool));
}

}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Meta, m) {
  m.impl("hstu_attn_fwd", TORCH_FN(recops::binding::hstu_attn_fwd_meta));
  m.impl("hstu_attn_bwd", TORCH_FN(recops::binding::hstu_attn_bwd_meta));
  m.impl("hstu_mask", TORCH_FN(recops::binding::hstu_mask_meta));
}
