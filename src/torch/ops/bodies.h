// torch/ops/bodies.h: the device-independent half of each kernel (view conversion, shape
// function, allocation, entry call). The _cpu files define them; the _cuda files call them after
// setting the device guard and with the current stream in the Context.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>

#include "recops/context.h"

namespace recops::binding {

at::Tensor run_dense_to_jagged(const at::Tensor& dense, const at::Tensor& seq_offsets,
                               std::optional<int64_t> total_L, const Context& ctx);

enum class CumsumKind { complete, exclusive, inclusive };
at::Tensor run_cumsum(CumsumKind kind, const at::Tensor& t, std::optional<at::ScalarType> out_dtype,
                      const Context& ctx);

}  // namespace recops::binding
