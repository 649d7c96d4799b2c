// training/fused_cross_entropy/cpu/fused_cross_entropy_cpu.cpp: cpu_generic, the CPU path of
// kernel.h at the baseline flags with std::exp.
#include "ops/training/fused_cross_entropy/cpu/kernel.h"

namespace recops::ops::fused_cross_entropy_ns {

Status run_cpu(const Params& p, const Context& ctx) {
  return run<training::StdExp>(p, ctx, "cpu_generic");
}

}  // namespace recops::ops::fused_cross_entropy_ns
