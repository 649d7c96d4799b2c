// training/chunk_kda/cpu/chunk_kda_cpu.cpp: cpu_generic, the composition of the KDA sub-ops
// (compose.cpp, training_ops.md §4.5) on host tensors; its roundings of the backward's fp32
// gradients run here on the host.
#include <cstdint>

#include "ops/training/chunk_kda/compose.h"
#include "ops/training/chunk_kda/impls.h"

namespace recops::ops::chunk_kda_ns {
namespace {

Status host_cast(const TensorView& out, const TensorView& src, const Context&) {
  const float* s = static_cast<const float*>(src.data);
  visit_floating(out.dtype, [&](auto x) {
    using X = decltype(x);
    X* o = static_cast<X*>(out.data);
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = from_double<X>(static_cast<double>(s[i]));
  });
  return Status::Ok();
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  return compose(p, ctx, host_cast);
}

}  // namespace recops::ops::chunk_kda_ns
