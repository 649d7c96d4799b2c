// training/chunk_gated_delta_rule_fwd_h/cuda/launch.cu: the accumulator switch, the V tile, the
// grid and the checked launches (architecture.md §2 step 5); kernel.cuh says how a block walks a
// sequence. Instantiations: one per accumulator (fp32; fp64 for fp64 k); the other tensors' dtypes
// are read at run time (each may differ, as on the CPU).
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/launch.h"
#include "ops/training/chunk_gated_delta_rule_fwd_h/cuda/kernel.cuh"
#include "ops/training/chunk_gated_delta_rule_fwd_h/cuda/tiles.h"
#include "ops/training/chunk_gated_delta_rule_fwd_h/impls.h"

namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns {
namespace {
constexpr const char* kOp = "chunk_gated_delta_rule_fwd_h";

template <class A>
Status launch(const Params& p, void* stream) {
  // The V tile: the widest power of two <= min(32, pow2 >= V) whose shared memory fits 48 KB, else
  // the widest that fits 96 KB (the launcher opts in), else the state column does not fit.
  int64_t cap = 1;
  while (cap < kMaxBV && cap < p.V) cap <<= 1;
  int64_t bv = 0;
  size_t bytes = 0;
  for (size_t budget : {kSmemDefault, kSmemMax}) {
    for (int64_t b = cap; b >= 1 && bv == 0; b >>= 1) {
      const size_t need = static_cast<size_t>(smem_elems(p.K, b, p.BT)) * sizeof(A);
      if (need <= budget) bv = b, bytes = need;
    }
    if (bv) break;
  }
  if (!bv)
    return Status(
        StatusCode::invalid_argument,
        std::string(kOp) + ": cuda_sm80 keeps a [K, 1] state column in shared memory; K=" +
            std::to_string(p.K) + " needs " + std::to_string(smem_elems(p.K, 1, p.BT) * sizeof(A)) +
            " bytes, more than the 98304 allowed (use the CPU, or a smaller K)");
  const int64_t vtiles = (p.V + bv - 1) / bv;
  const int64_t items = p.N * p.HV * vtiles;
  if (items > 0) {
    const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(
        kOp, fwd_h_kernel<A>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), bytes, stream, p,
        static_cast<int>(bv), vtiles, items));
  }
  // With offsets NT is a bound: h's chunks past the sequences' count are zeroed (on the device,
  // where the count is known).
  const int64_t hkv = p.HV * p.K * p.V;
  if (p.seq_offsets && p.NT > 0 && hkv > 0) {
    const int64_t work = (p.NT * hkv + kThreads - 1) / kThreads;
    const int64_t blocks = std::clamp<int64_t>(work, 1, 4096);
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, zero_tail_kernel,
                                                dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                                                0, stream, p, hkv));
  }
  return Status::Ok();
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.HV == 0 || p.V == 0) return Status::Ok();  // every output is empty
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.k_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns
