// jagged/jagged_dense_bmm/jagged_dense_bmm.h: the op's C++ API and its backward's (torch-free;
// jagged_ops.md §2.6), declared with jagged_jagged_bmm's in ops/jagged/common/bmm_api.h.
#pragma once

#include "ops/jagged/common/bmm_api.h"
