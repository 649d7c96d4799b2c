// ops/jagged/common/row_copy_binding.h: torch hooks the two row-copy conversions share (included by
// their binding.cpp; torch code, built into librecops_torch only). Each is the other's backward.
#pragma once

#include <optional>

#include "torch/kit.h"

namespace recops::ops {

// save: seq_offsets (argument 1) and the size `dim` of the input (argument 0), 0 when the input has
// no such dim (the op itself refuses it, with its own message). backward: the inverse op on the
// output gradient with those two, then `extra` (jagged_to_padded_dense's padding_value) if given.
inline binding::TorchHooks row_copy_grad_hooks(int64_t dim, const char* inverse,
                                               std::optional<double> extra) {
  binding::TorchHooks h;
  h.save = [dim](const binding::Args& a) -> binding::Args {
    const at::Tensor& in = a[0].toTensor();
    return {a[1], in.dim() > dim ? in.sym_size(dim) : c10::SymInt(0)};
  };
  h.backward = [inverse, extra](const binding::Args& saved, const std::vector<at::Tensor>& grads) {
    binding::Args args = {grads[0], saved[0], saved[1]};
    if (extra) args.push_back(*extra);
    return binding::call(inverse, std::move(args));
  };
  return h;
}

// The meta hooks' check of seq_offsets: 1-D int32 or int64.
inline void check_seq_offsets_meta(const char* op, const at::Tensor& seq_offsets) {
  TORCH_CHECK(seq_offsets.dim() == 1, op, ": seq_offsets must be 1-D [B+1], got ",
              seq_offsets.dim(), "-D");
  TORCH_CHECK(seq_offsets.scalar_type() == at::kInt || seq_offsets.scalar_type() == at::kLong, op,
              ": seq_offsets must be int32 or int64, got ", seq_offsets.scalar_type());
}

}  // namespace recops::ops
