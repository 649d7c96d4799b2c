// training/rms_norm_gated/cpu/rms_norm_gated_cpu.cpp: cpu_generic, the CPU path of kernel.h at
// the baseline flags with std::exp.
#include "ops/training/rms_norm_gated/cpu/kernel.h"

namespace recops::ops::rms_norm_gated_ns {

Status run_cpu(const Params& p, const Context& ctx) {
  return run<training::StdExp>(p, ctx, "cpu_generic");
}

}  // namespace recops::ops::rms_norm_gated_ns
