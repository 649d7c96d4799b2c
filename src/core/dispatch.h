// core/dispatch.h: the ordered implementation list of one op and the walk over it.
//
// Each op entry builds a static list, best first and reference last. Every implementation says
// whether this build and machine can run it (`available`) and whether it accepts a problem
// (`can_implement`); both return "" for yes and a reason otherwise. The first that accepts runs;
// if none does, the error lists every candidate with its reason.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/kit/impls.h"
#include "recops/context.h"
#include "recops/device.h"
#include "recops/registry.h"
#include "recops/status.h"

namespace recops::core {

inline constexpr std::string_view kReferenceImpl = "reference";

template <class Params>
struct Impl {
  const char* id;
  DeviceType backend;
  std::string (*available)();                   // "" = runnable in this build on this machine
  std::string (*can_implement)(const Params&);  // "" = accepts this problem
  Status (*run)(const Params&, const Context&);
  // Tunable implementations: their candidate configurations (recops/tuning.h); nullptr: none.
  std::vector<TuneConfig> (*candidates)() = nullptr;
};

inline std::string always_available() {
  return {};
}

// can_implement for implementations that take every valid problem.
template <class Params>
std::string accept_all(const Params&) {
  return {};
}

// can_implement of CUDA implementations that need compute capability `kMinCc` (major*10+minor) on
// the tensors' device (Params::device_index), not on device 0.
template <int kMinCc, class Params>
std::string cuda_capability_at_least(const Params& p) {
  return cuda::capability_reason(p.device_index, kMinCc);
}

// A list ending in the usual two CPU implementations: `first` (the CUDA ones, best first), then
// the multi-threaded CPU one ("cpu_generic") and the fp64 reference ("reference").
template <class Params>
std::vector<Impl<Params>> with_cpu_impls(std::vector<Impl<Params>> first,
                                         Status (*cpu)(const Params&, const Context&),
                                         Status (*reference)(const Params&, const Context&)) {
  first.push_back({"cpu_generic", DeviceType::cpu, always_available, accept_all<Params>, cpu});
  first.push_back({"reference", DeviceType::cpu, always_available, accept_all<Params>, reference});
  return first;
}

// The usual list: "cuda_sm80" (compute capability 8.0 or newer; pass RECOPS_IF_CUDA(f), nullptr
// leaves it out), "cpu_generic", "reference".
template <class Params>
std::vector<Impl<Params>> standard_impls(Status (*cuda_run)(const Params&, const Context&),
                                         Status (*cpu)(const Params&, const Context&),
                                         Status (*reference)(const Params&, const Context&)) {
  std::vector<Impl<Params>> first;
  if (cuda_run)
    first.push_back({"cuda_sm80", DeviceType::cuda, cuda::any_device_reason,
                     cuda_capability_at_least<80, Params>, cuda_run});
  return with_cpu_impls<Params>(std::move(first), cpu, reference);
}

template <class Params>
std::vector<ImplInfo> describe_impls(const std::vector<Impl<Params>>& impls) {
  std::vector<ImplInfo> out;
  for (const auto& im : impls)
    out.push_back({im.id, im.backend, im.available(),
                   im.candidates ? im.candidates() : std::vector<TuneConfig>{}});
  return out;
}

bool impl_skipped(const Context& ctx, std::string_view id);

template <class Params>
Status dispatch(std::string_view op, const std::vector<Impl<Params>>& impls, DeviceType backend,
                const Params& p, const Context& ctx) {
  std::string reasons;
  bool known = ctx.impl.empty();
  for (const auto& im : impls) {
    if (!ctx.impl.empty() && ctx.impl == im.id) known = true;
    if (im.backend != backend) continue;
    std::string why;
    if (!ctx.impl.empty() && ctx.impl != im.id) {
      why = "not the forced implementation '" + ctx.impl + "'";
    } else if (impl_skipped(ctx, im.id)) {
      why = "skipped by request";
    } else if (ctx.fail_on_reference && im.id == kReferenceImpl) {
      why = "reference fallback refused (fail_on_reference)";
    } else if (std::string a = im.available(); !a.empty()) {
      why = a;
    } else if (std::string c = im.can_implement(p); !c.empty()) {
      why = c;
    } else {
      if (ctx.impl_used) *ctx.impl_used = im.id;
      return im.run(p, ctx);
    }
    reasons += "\n  " + std::string(im.id) + ": " + why;
  }
  if (!known)
    return Status(StatusCode::invalid_argument, std::string(op) + ": impl='" + ctx.impl +
                                                    "' is not an implementation of this op");
  return Status(StatusCode::not_implemented,
                std::string(op) + ": no implementation accepts this problem on " +
                    backend_name(backend) + ":" +
                    (reasons.empty() ? " (none registered)" : reasons));
}

}  // namespace recops::core
