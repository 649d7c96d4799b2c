// torch/schema.cpp: every recops schema, in one TORCH_LIBRARY block (architecture.md §2 step 2).
// Kernels register per dispatch key in ops/<op>_{cpu,cuda,meta,autograd}.cpp.
//
// Forward names keep FBGEMM's unsuffixed names (jagged_ops.md §1.4); each conversion's backward is
// the other conversion, so there are no _bwd schemas for them.
#include <torch/library.h>

#include <string>
#include <vector>

#include "recops/context.h"

namespace {
void set_validate(bool on) {
  recops::set_validate(on);
}
}  // namespace

TORCH_LIBRARY(recops, m) {
  const std::vector<at::Tag> tags = {at::Tag::pt2_compliant_tag};

  // values [total_L, *E], seq_offsets [B+1] -> [B, max_seq_len, *E]
  m.def(
      "jagged_to_padded_dense(Tensor values, Tensor seq_offsets, SymInt max_seq_len, "
      "float padding_value=0.0) -> Tensor",
      tags);
  // dense [B, S, *E], seq_offsets [B+1] -> [total_L, *E]; total_L=None reads seq_offsets[B]
  m.def("dense_to_jagged(Tensor dense, Tensor seq_offsets, SymInt? total_L=None) -> Tensor", tags);
  // Meta-only helper: dense_to_jagged's output for a known total_L, from the public shape
  // function. dense_to_jagged's fake kernel (python/recops/ops.py) calls it after creating the
  // unbacked size that total_L=None needs, which only Python can do.
  m.def("_dense_to_jagged_meta(Tensor dense, Tensor seq_offsets, SymInt total_L) -> Tensor", tags);

  // Cumulative sums of int32/int64 lengths (not differentiable). complete: [n] -> [n+1] or
  // [R, n] -> [R, n+1]; exclusive/inclusive: t's shape, over the flattened tensor.
  for (const char* name :
       {"complete_cumsum", "exclusive_cumsum", "inclusive_cumsum", "asynchronous_complete_cumsum",
        "asynchronous_exclusive_cumsum", "asynchronous_inclusive_cumsum"}) {
    const std::string schema =
        std::string(name) + "(Tensor t, ScalarType? out_dtype=None) -> Tensor";
    m.def(schema.c_str(), tags);
  }

  // Offsets validation of CUDA calls (jagged_ops.md §1.2); the CPU always validates.
  m.def("set_validate(bool on) -> ()", &set_validate);
}
