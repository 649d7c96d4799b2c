// training/mhc_pre_bmm/impls.h: the implementations the entry lists, best first, reference last.
// Definitions live in reference.cpp and cpu/; neither includes the other. No CUDA yet.
#pragma once

#include "ops/training/mhc_pre_bmm/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::mhc_pre_bmm_ns {

Status run_reference(const Params& p, const Context& ctx);
Status run_cpu(const Params& p, const Context& ctx);

}  // namespace recops::ops::mhc_pre_bmm_ns
