// jagged/jagged_softmax/cpu/jagged_softmax_cpu_avx2.cpp: cpu_avx2, the CPU path of kernel.h built
// with AVX2 + FMA + F16C (CMakeLists.txt: every *_avx2.cpp); the registry runs it only where
// core::avx2_fma_reason() is empty.
#include "ops/jagged/jagged_softmax/cpu/kernel.h"

namespace recops::ops::jagged_softmax_ns {

Status run_cpu_avx2(const Params& p, const Context& ctx) {
  return run(p, ctx);
}

}  // namespace recops::ops::jagged_softmax_ns
