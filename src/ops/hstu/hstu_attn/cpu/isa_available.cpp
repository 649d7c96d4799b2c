// hstu_attn/cpu/isa_available.cpp: whether the AVX2 and AVX-512 kernels may run, and what the
// bf16 one accepts. These run on every CPU (the registry calls them to describe and pick the
// implementations), so they live here, compiled with the baseline flags, and not in the
// *_avx2.cpp / *_avx512.cpp files: code there may use the wider instructions anywhere, and a
// compiler that did so in these functions (GCC at -O1 under the sanitizers does) crashed
// `recops list` with SIGILL on a CPU without AVX-512.
#include <string>

#include "core/cpu_features.h"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

// The *_avx2.cpp files are built with AVX2, FMA and F16C: core's one test of the three.
std::string hstu_attn_fwd_avx2_available() {
  return core::avx2_fma_reason();
}

std::string hstu_attn_fwd_avx512_bf16_available() {
  const auto& f = core::cpu_features();
  return f.avx512f && f.avx512bw && f.avx512bf16
             ? std::string()
             : std::string("this CPU lacks AVX512-BF16 (or RECOPS_CPU_ISA caps it)");
}

std::string hstu_attn_fwd_avx512_bf16_accepts(const HstuAttnParams& p) {
  if (p.dtype != DType::bf16) return "bf16 inputs only (the bf16 dot products pack them exactly)";
  return {};
}

std::string hstu_attn_avx512_available() {
  return core::cpu_features().avx512f
             ? std::string()
             : std::string("this CPU lacks AVX-512 F (or RECOPS_CPU_ISA caps it)");
}

}  // namespace recops::ops
