// training/chunk_gated_delta_rule/compose.h: the composition of the GDN sub-ops that both
// cpu_generic (cpu/) and cuda_sm80 (cuda/) run (compose.cpp). The sub-ops dispatch on the tensors'
// device; the only work of the composition itself, two elementwise sums in the backward, is the
// backend's Adder.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/chunk_gated_delta_rule/params.h"

namespace recops::ops::chunk_gated_delta_rule_ns {

// out = a + b elementwise over out.numel() contiguous elements of one floating dtype (out may
// alias a), each sum in fp64 and rounded once; on the tensors' device, on ctx's stream.
using Adder = Status (*)(const TensorView& out, const TensorView& a, const TensorView& b,
                         const Context& ctx);

// The forward (p.bwd false) or the backward (p.bwd) through the sub-ops' public entries, every
// intermediate in p.workspace (params.h's Layout); p.plain composes the sub-ops' plain baselines.
Status compose(const Params& p, const Context& ctx, const Adder& add);

}  // namespace recops::ops::chunk_gated_delta_rule_ns
