// tests/fuzz/clang14_cpu_supports.h: force-included into src/core/cpu_features.cpp in the fuzz
// build only, when clang is older than 15: clang 14's __builtin_cpu_supports rejects "f16c" at
// compile time. Queries go through a function that asks cpuid for f16c and the builtin otherwise.
#pragma once

#include <cpuid.h>
#include <cstring>

static inline int recops_fuzz_cpu_supports(const char* f) {
  if (std::strcmp(f, "f16c") == 0) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) ? static_cast<int>((c >> 29) & 1u)
                                          : 0;  // CPUID.1:ECX.F16C
  }
  if (std::strcmp(f, "avx2") == 0) return __builtin_cpu_supports("avx2");
  if (std::strcmp(f, "fma") == 0) return __builtin_cpu_supports("fma");
  if (std::strcmp(f, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
  if (std::strcmp(f, "avx512bw") == 0) return __builtin_cpu_supports("avx512bw");
  if (std::strcmp(f, "avx512bf16") == 0) return __builtin_cpu_supports("avx512bf16");
  return 0;
}
#define __builtin_cpu_supports(feature) recops_fuzz_cpu_supports(feature)
