// recops/registry.h: what `recops list` and the binding show about the implementations.
#pragma once

#include <string>
#include <vector>

#include "recops/device.h"
#include "recops/tuning.h"

namespace recops {

struct ImplInfo {
  std::string id;           // e.g. "cuda_sm80", "cpu_generic", "reference"
  DeviceType backend;       // which tensors it runs on
  std::string unavailable;  // "" when this build and machine can run it, else the reason
  // Tunable implementations: every configuration `recops tune` may try (the first is the
  // built-in default); empty when nothing is tunable.
  std::vector<TuneConfig> candidates = {};
};

struct OpInfo {
  std::string name;             // canonical op name, e.g. "jagged_to_padded_dense"
  std::string family;           // family folder under src/ops: "jagged", "stem" or "hstu"
  std::vector<ImplInfo> impls;  // best first, reference last
};

// Every op compiled into this library, in a stable order.
std::vector<OpInfo> list_ops();

}  // namespace recops
