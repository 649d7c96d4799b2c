// jagged/multi_head_jagged_flash_attention/cpu/multi_head_jagged_flash_attention_cpu_avx2.cpp:
// cpu_avx2, the CPU path of kernel.h built with AVX2 + FMA + F16C (CMakeLists.txt: every
// *_avx2.cpp); the registry runs it only where core::avx2_fma_reason() is empty.
#include "ops/jagged/multi_head_jagged_flash_attention/cpu/kernel.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

Status run_cpu_avx2(const Params& p, const Context& ctx) {
  return run(p, ctx);
}

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
