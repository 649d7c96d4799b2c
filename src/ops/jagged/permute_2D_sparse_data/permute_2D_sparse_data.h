// jagged/permute_2D_sparse_data/permute_2D_sparse_data.h: the op's C++ API (torch-free), declared
// with its sibling's in ops/jagged/common/permute_api.h (one argument struct,
// PermuteSparseDataArgs).
#pragma once

#include "ops/jagged/common/permute_api.h"
