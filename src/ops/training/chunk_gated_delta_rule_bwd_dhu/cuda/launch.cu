// training/chunk_gated_delta_rule_bwd_dhu/cuda/launch.cu: the arithmetic type, the V tile, the
// grid and the checked launches (architecture.md §2 step 5); kernel.cuh says how a block walks a
// sequence. Instantiations: S = fp32 and S = fp64 (fp64 q), the tensors' dtypes are read at run
// time (one uniform switch per load or store).
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/launch.h"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/cuda/kernel.cuh"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/cuda/tiles.h"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/impls.h"

namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns {
namespace {
constexpr const char* kOp = "chunk_gated_delta_rule_bwd_dhu";

// kernel.cuh's dynamic shared memory for a V tile of bv columns.
int64_t smem_bytes(const Params& p, int64_t bv, int64_t elem) {
  return elem * (p.K * bv + 2 * p.BT * kKT + 2 * p.BT * bv + p.BT);
}

template <class S>
Status launch(const Params& p, void* stream) {
  // V tile: the widest power of two <= 32 (and not past V's) whose shared memory fits 48 KB; for
  // very wide K one column, with the opt-in up to 99 KB.
  int bv_log = 0;
  while (bv_log < 5 && (int64_t{1} << bv_log) < p.V) ++bv_log;
  while (bv_log > 0 && smem_bytes(p, int64_t{1} << bv_log, sizeof(S)) > kSmemSoft) --bv_log;
  const int64_t smem = smem_bytes(p, int64_t{1} << bv_log, sizeof(S));
  if (smem > kSmemHard)
    return Status(StatusCode::invalid_argument,
                  std::string(kOp) + ": cuda_sm80 needs K <= " +
                      std::to_string(kSmemHard / static_cast<int64_t>(sizeof(S)) - 2 * p.BT * kKT -
                                     3 * p.BT) +
                      " (the [K, 1] state slice and the staged rows must fit 99 KB of shared "
                      "memory); got K=" +
                      std::to_string(p.K));
  if (p.seq_offsets && p.B * p.NT * p.HV * p.K * p.V > 0) {
    const int64_t n = p.B * p.NT * p.HV * p.K * p.V;
    const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 4096);
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, spare_chunks_kernel,
                                                dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                                                0, stream, p));
  }
  const int64_t vtiles = (p.V + (int64_t{1} << bv_log) - 1) >> bv_log;
  const int64_t items = p.N * p.HV * vtiles;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  return RECOPS_LAUNCH_KERNEL(kOp, (bwd_dhu_kernel<S>), dim3(static_cast<unsigned>(blocks)),
                              dim3(kThreads), static_cast<size_t>(smem), stream, p, bv_log, vtiles,
                              items);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.BT < 1 || p.BT > kMaxBT)
    return Status(StatusCode::internal, std::string(kOp) + ": cuda_sm80 reached with chunk_size=" +
                                            std::to_string(p.BT) + " (16, 32 or 64 expected)");
  if (p.seq_offsets && p.N < 1) return Status::Ok();  // no sequence: no chunk, no row
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.q_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns
