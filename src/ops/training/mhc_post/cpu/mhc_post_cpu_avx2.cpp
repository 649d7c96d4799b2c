// training/mhc_post/cpu/mhc_post_cpu_avx2.cpp: cpu_avx2, the CPU path of kernel.h built with
// AVX2 + FMA (CMakeLists.txt: every *_avx2.cpp); the registry runs it only where
// core::avx2_fma_reason() is empty.
#include "ops/training/mhc_post/cpu/kernel.h"

namespace recops::ops::mhc_post_ns {

Status run_cpu_avx2(const Params& p, const Context& ctx) {
  return run(p, ctx, "cpu_avx2");
}

}  // namespace recops::ops::mhc_post_ns
