// stem_prepare/impls.h: the implementations the entry lists (definitions live in reference.cpp,
// cpu/ and cuda/; none includes another).
#pragma once

#include "core/kit/impls.h"
#include "ops/stem/prepare/params.h"

namespace recops::ops {

RECOPS_DECLARE_IMPLS(StemPrepareParams, stem_prepare_reference, stem_prepare_cpu,
                     stem_prepare_cuda);

}  // namespace recops::ops
