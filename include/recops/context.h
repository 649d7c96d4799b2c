// recops/context.h: per-call execution settings shared by every op entry.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "recops/tuning.h"

namespace recops {

struct Context {
  // cudaStream_t for CUDA tensors (nullptr: the legacy default stream); ignored on the CPU.
  void* stream = nullptr;
  // Implementation filters (ids as `recops list` prints them): run exactly `impl` when set,
  // never any id in `skip_impls`.
  std::string impl;
  std::vector<std::string> skip_impls;
  // Refuse, rather than fall back, when only the reference would run (`check --fail-on-ref`).
  bool fail_on_reference = false;
  // Out: the id of the implementation that ran (optional).
  std::string* impl_used = nullptr;
  // Scratch memory on the tensors' device, sized by the op's *_workspace_bytes function.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // CPU threads for this call (0: all of OpenMP's default).
  int num_threads = 0;
  // Tunable implementations (recops/tuning.h): run with this configuration instead of the tuned
  // or built-in one (`recops tune`; it must be one of the implementation's candidates).
  const TuneConfig* tune_config = nullptr;
  // Out: the configuration a tunable implementation ran with (optional; untouched by others).
  TuneUsed* tune_used = nullptr;
};

// Validation of data-dependent rules on CUDA tensors (offsets contents, int32 overflow):
// a small device-to-host read and one synchronisation per call. Default: on in debug builds,
// off in release builds; RECOPS_VALIDATE=0|1 in the environment overrides at load. The CPU
// always validates. Skipped while the stream is being captured into a CUDA graph.
bool validate_enabled();
void set_validate(bool on);

}  // namespace recops
