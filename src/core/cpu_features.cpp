#include "core/cpu_features.h"

#include <cstdlib>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <cstring>
#include <fstream>
#include <string>

namespace recops::core {
namespace {
CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  // f16c through cpuid (leaf 1, ECX bit 29): clang 14's __builtin_cpu_supports does not know it.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) f.f16c = (ecx >> 29) & 1u;
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#endif
#elif defined(__aarch64__)
  f.neon = true;
#endif
  if (const char* cap = std::getenv("RECOPS_CPU_ISA")) {
    if (std::strcmp(cap, "generic") == 0) f = CpuFeatures{};
    if (std::strcmp(cap, "avx2") == 0) f.avx512f = f.avx512bw = f.avx512bf16 = false;
  }
  return f;
}
}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

std::string cpu_features_str() {
  const auto& f = cpu_features();
  std::string s;
  auto add = [&](bool b, const char* n) {
    if (b) s += (s.empty() ? "" : " ") + std::string(n);
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512bf16, "avx512bf16");
  add(f.neon, "neon");
  return s.empty() ? "generic" : s;
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  }
  return "cpu";
}

std::string avx2_fma_reason() {
  const CpuFeatures& f = cpu_features();
  return f.avx2 && f.fma && f.f16c
             ? std::string()
             : std::string("this CPU lacks AVX2/FMA/F16C (or RECOPS_CPU_ISA caps it)");
}

}  // namespace recops::core
