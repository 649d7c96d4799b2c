// jagged/concat_1d_jagged/impls.h: the implementations the entry lists, best first, reference
// last (no CUDA one yet: README.md, Limits). Definitions live in reference.cpp and cpu/.
#pragma once

#include "ops/jagged/concat_1d_jagged/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::concat_1d_jagged_ns {

Status run_reference(const Params& p, const Context& ctx);
Status run_cpu(const Params& p, const Context& ctx);

}  // namespace recops::ops::concat_1d_jagged_ns
