// jagged/permute_1D_sparse_data/driver.cpp: the op's CLI driver is the family's permute driver
// (common/driver_permute.h).
#include "ops/jagged/common/driver_permute.h"

RECOPS_REGISTER_DRIVER(recops::cli::PermuteDriverOf<false>);
