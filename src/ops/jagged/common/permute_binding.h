// ops/jagged/common/permute_binding.h: the Meta hook the two permute ops' helper ops share
// (included by their binding.cpp; torch code, built into librecops_torch only): output sizes in
// SymInts for dynamic torch.compile. permuted_lengths [P] / [P, B]; permuted_values [R, *E] and
// permuted_weights [R, *E'] with R = permuted_lengths_sum (required there: no data to read);
// permuted_weights is [0] without weights (the kit's absent output).
#pragma once

#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace recops::ops {

inline binding::TorchHooks permute_meta_hooks(const char* op, bool two_d) {
  binding::TorchHooks h;
  h.meta = [op, two_d](const binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& permute = a[0].toTensor();
    const at::Tensor& lengths = a[1].toTensor();
    const at::Tensor& values = a[2].toTensor();
    TORCH_CHECK(permute.dim() == 1, op, ": permute must be 1-D [P]");
    TORCH_CHECK(lengths.dim() == (two_d ? 2 : 1), op, ": lengths must be ",
                two_d ? "2-D [T, B]" : "1-D [T]");
    TORCH_CHECK(values.dim() >= 1, op, ": values must be [N, *E]");
    TORCH_CHECK(!a[4].isNone(), op,
                ": permuted_lengths_sum must be given for tensors without data (Meta, "
                "torch.compile)");
    const c10::SymInt rows = a[4].toSymInt();
    TORCH_SYM_CHECK(rows.sym_ge(0), op, ": permuted_lengths_sum must be >= 0");
    const auto like = [&rows](const at::Tensor& t) {
      std::vector<c10::SymInt> s(t.sym_sizes().begin(), t.sym_sizes().end());
      s[0] = rows;
      return at::empty_symint(s, t.options());
    };
    std::vector<c10::SymInt> ls = {permute.sym_size(0)};
    if (two_d) ls.push_back(lengths.sym_size(1));
    at::Tensor weights = a[3].isNone() ? at::empty({0}, values.options()) : like(a[3].toTensor());
    return {at::empty_symint(ls, lengths.options()), like(values), weights};
  };
  return h;
}

}  // namespace recops::ops
