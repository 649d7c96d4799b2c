// training/chunk_fwd_o/cuda/launch_gk.h: the gk launcher (launch_gk.cu, its own translation unit so
// that the gk kernel's two instantiations compile apart from kernel.cuh's four).
#pragma once

#include "ops/training/chunk_fwd_o/params.h"
#include "recops/status.h"

namespace recops::ops::chunk_fwd_o_ns {

// Launches kernel_gk.cuh's kernel on `stream` (the current device); p.gk set, sizes non-empty.
Status launch_gk(const Params& p, void* stream);

}  // namespace recops::ops::chunk_fwd_o_ns
