// training/chunk_gated_delta_rule/cpu/chunk_gated_delta_rule_cpu.cpp: cpu_generic, the composition
// of the GDN sub-ops (compose.cpp, training_ops.md §4.4) on host tensors; its two elementwise
// sums run here on the host.
#include <cstdint>

#include "ops/training/chunk_gated_delta_rule/compose.h"
#include "ops/training/chunk_gated_delta_rule/impls.h"

namespace recops::ops::chunk_gated_delta_rule_ns {
namespace {

Status host_add(const TensorView& out, const TensorView& a, const TensorView& b, const Context&) {
  visit_floating(out.dtype, [&](auto x) {
    using X = decltype(x);
    X* o = static_cast<X*>(out.data);
    const X* pa = static_cast<const X*>(a.data);
    const X* pb = static_cast<const X*>(b.data);
    for (int64_t i = 0; i < out.numel(); ++i)
      o[i] = from_double<X>(to_double(pa[i]) + to_double(pb[i]));
  });
  return Status::Ok();
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  return compose(p, ctx, host_add);
}

}  // namespace recops::ops::chunk_gated_delta_rule_ns
