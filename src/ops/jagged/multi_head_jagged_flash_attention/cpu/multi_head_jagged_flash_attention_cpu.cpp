// jagged/multi_head_jagged_flash_attention/cpu/multi_head_jagged_flash_attention_cpu.cpp:
// cpu_generic, the CPU path of kernel.h at the baseline ISA.
#include "ops/jagged/multi_head_jagged_flash_attention/cpu/kernel.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

Status run_cpu(const Params& p, const Context& ctx) {
  return run(p, ctx);
}

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
