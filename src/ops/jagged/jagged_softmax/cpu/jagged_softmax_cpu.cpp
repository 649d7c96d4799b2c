// jagged/jagged_softmax/cpu/jagged_softmax_cpu.cpp: cpu_generic, the CPU path of kernel.h at the
// baseline ISA.
#include "ops/jagged/jagged_softmax/cpu/kernel.h"

namespace recops::ops::jagged_softmax_ns {

Status run_cpu(const Params& p, const Context& ctx) {
  return run(p, ctx);
}

}  // namespace recops::ops::jagged_softmax_ns
