// jagged/jagged_jagged_bmm/driver.cpp: the `recops` CLI's driver of jagged_jagged_bmm and
// jagged_jagged_bmm_bwd (fields and judging: ops/jagged/common/bmm_driver.h).
#include "ops/jagged/common/bmm_driver.h"

namespace recops::cli {
RECOPS_REGISTER_DRIVER(BmmDriver<false>);
}  // namespace recops::cli
