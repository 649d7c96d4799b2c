// jagged/jagged_jagged_bmm_jagged_out/driver.cpp: the `recops` CLI's driver of
// jagged_jagged_bmm_jagged_out and its _bwd (fields and judging: common/jagged2_bmm_driver.h).
#include "ops/jagged/common/jagged2_bmm_driver.h"

namespace recops::cli {
RECOPS_REGISTER_DRIVER(Jagged2BmmDriver<false>);
}  // namespace recops::cli
