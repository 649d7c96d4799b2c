// tools/recops/timing.h: how bench and tune time an op (performance.md): warm-up, then repeated
// calls timed with CUDA events (CUDA) or the wall clock (CPU), the median and the 10/90
// percentiles.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/cuda/timer.h"
#include "recops/device.h"
#include "recops/status.h"

namespace recops::cli {

struct Timing {
  Status status;
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
  int reps = 0;
};

inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

inline Timing summarize(const std::vector<double>& ms) {
  Timing t;
  t.reps = static_cast<int>(ms.size());
  t.median_ms = quantile(ms, 0.5);
  t.p10_ms = quantile(ms, 0.1);
  t.p90_ms = quantile(ms, 0.9);
  return t;
}

// Repeats `call(k)` (k = the rep index) and times each call: the stopping rule is at least
// `min_reps` and 0.1 s, or max_seconds once 3 reps are in.
template <class Call>
Timing time_calls(DeviceType backend, int warmup, int min_reps, double max_seconds, Call&& call) {
  Timing bad;
  for (int i = 0; i < warmup; ++i) {
    if (Status s = call(i); !s.ok()) {
      bad.status = s;
      return bad;
    }
  }
  if (backend == DeviceType::cuda)
    if (Status s = core::cuda::synchronize(0); !s.ok()) return bad.status = s, bad;
  std::vector<double> ms;
  const auto t0 = std::chrono::steady_clock::now();
  core::cuda::EventTimer timer(0);
  for (int k = 0;; ++k) {
    double m = 0;
    if (backend == DeviceType::cuda) {
      Status s = timer.start(nullptr);
      if (s.ok()) s = call(k);
      if (s.ok()) s = timer.stop(nullptr);
      if (s.ok()) s = timer.elapsed_ms(&m);
      if (!s.ok()) return bad.status = s, bad;
    } else {
      const auto a = std::chrono::steady_clock::now();
      if (Status s = call(k); !s.ok()) return bad.status = s, bad;
      m = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
    }
    ms.push_back(m);
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int n = static_cast<int>(ms.size());
    if ((n >= min_reps && el >= 0.1) || (el >= max_seconds && n >= 3) || n >= 5000) break;
  }
  return summarize(ms);
}

// One configuration of an op as bench and tune time it: 5 warm-up calls on CUDA, 2 on the CPU,
// then at least `min_reps` timed ones (0: 20 on CUDA, 10 on the CPU), as time_calls stops.
template <class Call>
Timing time_op(DeviceType backend, int min_reps, double max_seconds, Call&& call) {
  const bool cuda = backend == DeviceType::cuda;
  return time_calls(backend, cuda ? 5 : 2, min_reps > 0 ? min_reps : (cuda ? 20 : 10), max_seconds,
                    std::forward<Call>(call));
}

}  // namespace recops::cli
