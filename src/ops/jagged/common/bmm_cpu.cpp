// ops/jagged/common/bmm_cpu.cpp: cpu_generic of jagged_dense_bmm and jagged_jagged_bmm, the path
// of bmm_cpu_kernel.h built with the baseline flags.
#include "ops/jagged/common/bmm_cpu_kernel.h"

namespace recops::ops::bmm {

Status run_cpu(const BmmParams& p, const Context& ctx) {
  return run_cpu_kernel(p, ctx);
}

}  // namespace recops::ops::bmm
