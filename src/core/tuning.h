// core/tuning.h: how a tunable implementation picks its configuration (recops/tuning.h has the
// public side: configurations, the tuning files, their location).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "recops/context.h"
#include "recops/device.h"
#include "recops/dtype.h"
#include "recops/status.h"
#include "recops/tuning.h"

namespace recops::core {

struct TuneQuery {
  std::string_view op;    // the op name (as the registry lists it)
  std::string_view impl;  // the implementation id
  DeviceType backend = DeviceType::cpu;
  int device_index = 0;
  DType dtype = DType::fp32;
  std::string bucket;                                   // the problem's shape bucket
  const std::vector<TuneConfig>* candidates = nullptr;  // the implementation's candidates
  TuneConfig fallback;                                  // the built-in heuristic's choice
};

// The configuration to run with: Context::tune_config when set (it must be one of the candidates,
// missing parameters taken from the fallback; else invalid_argument naming the parameter), else
// the tuning files' entry for (device, op, impl, dtype, bucket) when it is one of the candidates,
// else the fallback. Fills ctx.tune_used when set.
Status resolve_config(const TuneQuery& q, const Context& ctx, TuneConfig* out);

// "2^k" for the power of two k = ceil(log2(max(1, n))) rounded up to a multiple of `step`: shape
// buckets of jagged problems (rows=2^20 covers (2^18, 2^20] with step 2).
std::string pow2_bucket(int64_t n, int step = 1);

// Every combination of the given parameter values (the first parameter varies slowest).
std::vector<TuneConfig> config_grid(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& params);

}  // namespace recops::core
