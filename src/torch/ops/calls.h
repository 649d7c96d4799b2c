// torch/ops/calls.h: typed dispatcher handles of the registered ops. The autograd kernels call
// only these (never the recops entries directly), so torch.compile traces forward and backward
// as graphs of recops ops.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>

namespace recops::binding {

inline at::Tensor call_jagged_to_padded_dense(const at::Tensor& values,
                                              const at::Tensor& seq_offsets,
                                              const c10::SymInt& max_seq_len,
                                              double padding_value) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("recops::jagged_to_padded_dense", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymInt, double)>();
  return op.call(values, seq_offsets, max_seq_len, padding_value);
}

inline at::Tensor call_dense_to_jagged(const at::Tensor& dense, const at::Tensor& seq_offsets,
                                       const std::optional<c10::SymInt>& total_L) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("recops::dense_to_jagged", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, std::optional<c10::SymInt>)>();
  return op.call(dense, seq_offsets, total_L);
}

}  // namespace recops::binding
