// tests/fuzz/fuzz_tuning.cpp: the tuning-file loader (src/core/tuning.cpp) on arbitrary file
// contents through RECOPS_TUNING_FILE, and TuneConfig::parse on the same bytes as text. Both must
// report errors or load; a crash or a sanitizer report is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "recops/tuning.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/recops_fuzz_tuning_" + std::to_string(getpid()) + ".json";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  setenv("RECOPS_TUNING_FILE", path.c_str(), 1);
  recops::reload_tuning();
  (void)recops::tuning_load_errors();
  for (const auto& e : recops::tuned_entries()) (void)e.config.str();
  recops::TuneConfig c;
  std::string error;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (recops::TuneConfig::parse(text, &c, &error)) (void)c.str();
  return 0;
}
