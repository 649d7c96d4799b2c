// ops/jagged/common/bmm_cpu_avx2.cpp: cpu_avx2 of jagged_dense_bmm and jagged_jagged_bmm, the path
// of bmm_cpu_kernel.h built with AVX2 + FMA + F16C (CMakeLists.txt: every *_avx2.cpp); the
// registry runs it only where core::avx2_fma_reason() is empty.
#include "ops/jagged/common/bmm_cpu_kernel.h"

namespace recops::ops::bmm {

Status run_cpu_avx2(const BmmParams& p, const Context& ctx) {
  return run_cpu_kernel(p, ctx);
}

}  // namespace recops::ops::bmm
