// dense_to_jagged/impls.h: the op's own implementation: its golden (reference.cpp). The params,
// cpu_generic and cuda_sm80 (with this folder's kernel) are the row-copy conversions' shared ones
// (ops/jagged/common/row_copy.h).
#pragma once

#include "ops/jagged/common/row_copy.h"

namespace recops::ops {

Status dense_to_jagged_reference(const RowCopyParams& p, const Context& ctx);

}  // namespace recops::ops
