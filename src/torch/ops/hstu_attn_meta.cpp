// hstu_attn_fwd / hstu_attn_bwd / hstu_mask, Meta kernels: output shapes only. With concrete
// sizes (eager meta tensors, static compile) they come from the public shape functions, the same
// ones the CPU kernels allocate with, so every shape rule is checked. With symbolic sizes
// (torch.compile(dynamic=True)) the outputs are the inputs' symbolic shapes (out: q's with v's last
// dim; dq, dk, dv, drab: q's, k's, v's, rab's), so token counts stay symbolic and nothing
// specialises; the shape rules are then checked by the real kernel at run time.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <initializer_list>
#include <vector>

#include "torch/ops/hstu_attn_common.h"

namespace recops::binding {
namespace {

bool any_symbolic(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    for (const c10::SymInt& s : t->sym_sizes())
      if (s.is_symbolic()) return true;
  return false;
}

at::Tensor like_symbolic(const at::Tensor& t) {
  return at::empty_symint(t.sym_sizes(), t.options());
}

at::Tensor hstu_attn_fwd_meta(RECOPS_HSTU_ARGS_DECL) {
  if (any_symbolic({&q, &k, &v})) {
    std::vector<c10::SymInt> sizes(q.sym_sizes().begin(), q.sym_sizes().end());
    sizes.back() = v.sym_sizes().back();
    return at::empty_symint(sizes, q.options());
  }
  const HstuAttnArgs a = hstu_args("hstu_attn_fwd", RECOPS_HSTU_ARGS_PASS);
  Shape shape;
  check(hstu_attn_fwd_shape(a, &shape));
  return new_output(shape, q.options());
}

HstuGrads hstu_attn_bwd_meta(const at::Tensor& dout, RECOPS_HSTU_ARGS_DECL, bool want_drab) {
  if (any_symbolic({&dout, &q, &k, &v})) {
    const bool with_drab = want_drab && rab.has_value() && rab->defined();
    return {like_symbolic(q), like_symbolic(k), like_symbolic(v),
            with_drab ? like_symbolic(*rab) : at::empty({0}, q.options())};
  }
  const HstuAttnArgs a = hstu_args("hstu_attn_bwd", RECOPS_HSTU_ARGS_PASS);
  Shape sq, sk, sv, sr;
  check(hstu_attn_bwd_shape(a, &sq, &sk, &sv, &sr));
  const bool with_drab = want_drab && rab.has_value() && rab->defined();
  return {new_output(sq, q.options()), new_output(sk, k.options()), new_output(sv, v.options()),
          with_drab ? new_output(sr, rab->options()) : at::empty({0}, q.options())};
}

at::Tensor hstu_mask_meta(RECOPS_HSTU_ARGS_DECL, int64_t seq, int64_t head) {
  if (any_symbolic({&q, &k, &v}))
    return at::empty({max_seq_len_q, max_seq_len_k}, q.options().dtype(at::kBool));
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
