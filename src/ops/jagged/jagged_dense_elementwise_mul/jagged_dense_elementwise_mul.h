// jagged/jagged_dense_elementwise_mul/jagged_dense_elementwise_mul.h: the op's C++ API and its
// backward's (torch-free; jagged_ops.md §2.4(a)), declared with jagged_dense_elementwise_add's in
// ops/jagged/common/jagged_dense_ew_api.h.
#pragma once

#include "ops/jagged/common/jagged_dense_ew_api.h"
