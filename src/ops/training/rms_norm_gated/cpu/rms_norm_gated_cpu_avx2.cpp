// training/rms_norm_gated/cpu/rms_norm_gated_cpu_avx2.cpp: cpu_avx2, the CPU path of kernel.h built
// with AVX2 + FMA (CMakeLists.txt: every *_avx2.cpp) and training::poly_exp64 for σ(z), so that
// the element loops vectorise (4 doubles a lane group); the registry runs it only where
// core::avx2_fma_reason() is empty.
#include "ops/training/rms_norm_gated/cpu/kernel.h"

namespace recops::ops::rms_norm_gated_ns {
namespace {
struct PolyExp64 {
  static double exp(double x) { return training::poly_exp64(x); }
};
}  // namespace

Status run_cpu_avx2(const Params& p, const Context& ctx) {
  return run<PolyExp64>(p, ctx, "cpu_avx2");
}

}  // namespace recops::ops::rms_norm_gated_ns
