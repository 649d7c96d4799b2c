// core/cpu_features.h: what the host CPU supports, and the ISA cap for tests.
#pragma once

#include <string>

namespace recops::core {

struct CpuFeatures {
  bool avx2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512bf16 = false;
  bool f16c = false;
  bool fma = false;
  bool neon = false;
};

// Detected once. RECOPS_CPU_ISA=generic|avx2|avx512 caps what is reported, so that tests can force
// every CPU path on a machine that has more.
const CpuFeatures& cpu_features();
std::string cpu_features_str();
std::string cpu_name();  // model name as the OS reports it

// "" when the *_avx2.cpp kernels (AVX2 + FMA + F16C) may run here, else why not. Compiled with the
// baseline flags: the registry calls it on every CPU.
std::string avx2_fma_reason();

}  // namespace recops::core
