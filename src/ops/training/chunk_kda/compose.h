// training/chunk_kda/compose.h: the composition of the KDA sub-ops that both cpu_generic (cpu/)
// and cuda_sm80 (cuda/) run (compose.cpp). The sub-ops dispatch on the tensors' device; the only
// work of the composition itself, rounding the backward's fp32 dq, dk and dbeta to their outputs'
// dtypes, is the backend's Caster.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/chunk_kda/params.h"

namespace recops::ops::chunk_kda_ns {

// out = src elementwise over out.numel() contiguous elements (src fp32, out any floating dtype),
// each value rounded once; on the tensors' device, on ctx's stream.
using Caster = Status (*)(const TensorView& out, const TensorView& src, const Context& ctx);

// The forward (p.bwd false) or the backward (p.bwd) through the sub-ops' public entries, every
// intermediate in p.workspace (params.h's Layout); p.plain composes the sub-ops' plain baselines.
Status compose(const Params& p, const Context& ctx, const Caster& cast);

}  // namespace recops::ops::chunk_kda_ns
