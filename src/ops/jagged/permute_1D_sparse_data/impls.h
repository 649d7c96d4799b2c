// jagged/permute_1D_sparse_data/impls.h: the op's golden; the CPU and CUDA paths are the family's
// permute ones (common/permute_params.h), which its entry lists before it.
#pragma once

#include "ops/jagged/common/permute_params.h"

namespace recops::ops::permute_1D_sparse_data_ns {

Status run_reference(const PermuteParams& p, const Context& ctx);

}  // namespace recops::ops::permute_1D_sparse_data_ns
