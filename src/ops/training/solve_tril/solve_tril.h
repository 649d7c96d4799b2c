// training/solve_tril/solve_tril.h: the C++ API of solve_tril (training_ops.md §4.2, §4.3; fla-core
// fla.ops.utils.solve_tril.solve_tril): Ai = (I + A)^-1 per chunk block. Forward only.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct SolveTrilArgs {
  TensorView A;                           // [B, T, HV, BT], fp32 (fp64, fp16, bf16 accepted)
  std::optional<TensorView> seq_offsets;  // [N + 1] int32/int64 (fla's cu_seqlens), B = 1
  std::optional<DType> out_dtype;         // Ai's dtype; None = fp32
  std::optional<int64_t> chunk_size;      // None = A's last dim; else must equal it
};

// Ai's shape (A's) and dtype; every rule that needs no data.
Status solve_tril_shape(const SolveTrilArgs& a, Shape* out_shape, DType* out_dtype);
// Ai: contiguous, A's shape, dtype out_dtype (fp32 when None), on A's device.
Status solve_tril(const SolveTrilArgs& a, const TensorView& Ai, const Context& ctx = {});

}  // namespace recops
