// jagged/jagged_dense_elementwise_add/impls.h: the op's own implementation, its golden
// (reference.cpp). The params, cpu_generic and cuda_sm80 are the jagged-dense elementwise ops'
// shared ones (ops/jagged/common/jagged_dense_ew.h).
#pragma once

#include "ops/jagged/common/jagged_dense_ew.h"

namespace recops::ops {

Status jagged_dense_elementwise_add_reference(const JdEwParams& p, const Context& ctx);

}  // namespace recops::ops
