// tests/fuzz/fuzz_safetensors.cpp: the safetensors reader of `recops record/compare`
// (tools/recops/safetensors.cpp) on arbitrary file contents. It must return an error Status or
// tensors whose byte counts match their shapes; a crash or a sanitizer report is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "tools/recops/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/recops_fuzz_safetensors_" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  recops::cli::SafetensorsFile file;
  if (recops::cli::read_safetensors(path, &file).ok()) {
    for (const auto& [name, t] : file.tensors) {
      int64_t bytes = 0;
      if (!recops::checked_nbytes(name, t.shape(), t.dtype(), &bytes).ok() || bytes != t.nbytes() ||
          bytes > static_cast<int64_t>(size))
        __builtin_trap();  // accepted a tensor its file cannot hold
    }
  }
  return 0;
}
