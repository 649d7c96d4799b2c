// jagged_to_padded_dense/driver.cpp: the `recops` CLI driver, the row-copy conversions' shared one
// (its case fields: ops/jagged/common/driver_row_copy.h).
#include "ops/jagged/common/driver_row_copy.h"

RECOPS_REGISTER_DRIVER(recops::cli::RowCopyDriverOf<recops::ops::RowCopyDir::to_dense>);
