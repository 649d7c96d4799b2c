// jagged/jagged_index_select/binding.cpp: the torch hook the generic binding cannot derive: the
// Meta kernel of the helper op _jagged_index_select_meta, for symbolic sizes (dynamic
// torch.compile). out is [num_dense_output_rows, *E] (the argument is required there unless
// K = 0: without data the size is unknown), out_lengths is [K]. jagged_index_select itself has no
// C++ Meta kernel: with num_dense_output_rows omitted its size is data dependent, an unbacked
// SymInt that only Python can create (fake.py, which then calls the helper).
#include <ATen/ops/empty.h>

#include <optional>

#include "torch/kit.h"

RECOPS_TORCH_HOOKS(_jagged_index_select_meta) {
  recops::binding::TorchHooks h;
  h.meta = [](const recops::binding::Args& a) -> std::vector<at::Tensor> {
    const at::Tensor& values = a[0].toTensor();
    const at::Tensor& lengths = a[1].toTensor();
    const at::Tensor& indices = a[2].toTensor();
    TORCH_CHECK(values.dim() >= 1, "jagged_index_select: values must be [total_L, *E]");
    TORCH_CHECK(lengths.dim() == 1 && indices.dim() == 1,
                "jagged_index_select: seq_lengths and indices must be 1-D");
    // Without num_dense_output_rows the size is known only when K is a plain 0 (nothing selected).
    const bool k0 = indices.sym_size(0).maybe_as_int() == std::optional<int64_t>(0);
    TORCH_CHECK(!a[3].isNone() || k0,
                "jagged_index_select: num_dense_output_rows (the sum of seq_lengths[indices]) "
                "must be given for tensors without data (Meta, torch.compile)");
    const c10::SymInt rows = a[3].isNone() ? c10::SymInt(0) : a[3].toSymInt();
    TORCH_SYM_CHECK(rows.sym_ge(0), "jagged_index_select: num_dense_output_rows must be >= 0");
    std::vector<c10::SymInt> shape = {rows};
    for (int64_t i = 1; i < values.dim(); ++i) shape.push_back(values.sym_size(i));
    return {at::empty_symint(shape, values.options()),
            at::empty_symint({indices.sym_size(0)}, lengths.options())};
  };
  return h;
}
