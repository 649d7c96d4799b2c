// jagged/keyed_jagged_index_select_dim1/impls.h: the op's golden; the CPU and CUDA paths are the
// family's segment-select ones (common/select_params.h), which its entry lists before it.
#pragma once

#include "ops/jagged/common/select_params.h"

namespace recops::ops::keyed_jagged_index_select_dim1_ns {

Status run_reference(const SelectParams& p, const Context& ctx);

}  // namespace recops::ops::keyed_jagged_index_select_dim1_ns
