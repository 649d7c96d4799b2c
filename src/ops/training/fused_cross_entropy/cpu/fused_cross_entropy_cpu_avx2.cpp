// training/fused_cross_entropy/cpu/fused_cross_entropy_cpu_avx2.cpp: cpu_avx2, the CPU path of
// kernel.h built with AVX2 + FMA (CMakeLists.txt: every *_avx2.cpp) and training::PolyExp, which
// the compiler vectorises 8 lanes wide; the registry runs it only where core::avx2_fma_reason()
// is empty.
#include "ops/training/fused_cross_entropy/cpu/kernel.h"

namespace recops::ops::fused_cross_entropy_ns {

Status run_cpu_avx2(const Params& p, const Context& ctx) {
  return run<training::PolyExp>(p, ctx, "cpu_avx2");
}

}  // namespace recops::ops::fused_cross_entropy_ns
