// jagged/jagged_dense_elementwise_add/jagged_dense_elementwise_add.h: the op's C++ API
// (torch-free; jagged_ops.md §2.3), declared with jagged_dense_elementwise_mul's in
// ops/jagged/common/jagged_dense_ew_api.h.
#pragma once

#include "ops/jagged/common/jagged_dense_ew_api.h"
