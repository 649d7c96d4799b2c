// training/mhc_post/cpu/mhc_post_cpu.cpp: cpu_generic, the CPU path of kernel.h at the baseline
// flags.
#include "ops/training/mhc_post/cpu/kernel.h"

namespace recops::ops::mhc_post_ns {

Status run_cpu(const Params& p, const Context& ctx) {
  return run(p, ctx, "cpu_generic");
}

}  // namespace recops::ops::mhc_post_ns
