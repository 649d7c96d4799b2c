// training/chunk_bwd_dv_local/cuda/launch.cu: the arithmetic type, the grid and the checked launch
// (architecture.md §2 step 5); kernel.cuh says how a block forms a chunk's dv rows.
// Instantiations: S = fp32 and S = fp64 (fp64 do); the tensors' dtypes are read at run time (one
// uniform switch per load or store).
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/launch.h"
#include "ops/training/chunk_bwd_dv_local/cuda/kernel.cuh"
#include "ops/training/chunk_bwd_dv_local/cuda/tiles.h"
#include "ops/training/chunk_bwd_dv_local/impls.h"

namespace recops::ops::chunk_bwd_dv_local_ns {
namespace {
constexpr const char* kOp = "chunk_bwd_dv_local";

template <class S>
Status launch(const Params& p, void* stream) {
  const int64_t bt = p.BT;
  // Slots (kernel.cuh): B·ceil(T/BT), or floor(T/BT) + N with seq_offsets.
  const int64_t slots = p.seq_offsets ? p.T / bt + p.N : p.B * ((p.T + bt - 1) / bt);
  const int64_t items = slots * p.HV;
  if (items == 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(items, kMaxBlocks);
  // kernel.cuh's dynamic shared memory: fp32 BT = 64 about 34 KB; fp64 about 68 KB (the checked
  // launch raises the kernel's limit past 48 KB).
  const int64_t smem =
      static_cast<int64_t>(sizeof(S)) * (2 * bt * (kKT + 1) + bt * (bt + 1) + bt * kBV + bt);
  return RECOPS_LAUNCH_KERNEL(kOp, (dv_local_kernel<S>), dim3(static_cast<unsigned>(blocks)),
                              dim3(kThreads), static_cast<size_t>(smem), stream, p, items);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.B * p.T * p.HV * p.V == 0) return Status::Ok();  // nothing to write (the entry skips it)
  if (p.BT < 1 || p.BT > kMaxBT)
    return Status(StatusCode::internal, std::string(kOp) + ": cuda_sm80 reached with chunk_size=" +
                                            std::to_string(p.BT) + " (16, 32 or 64 expected)");
  if (p.seq_offsets && p.N < 1)
    return Status(StatusCode::invalid_argument,
                  std::string(kOp) + ": seq_offsets has no sequence but T > 0");
  core::cuda::ScopedDevice device(p.device_index);
  RECOPS_RETURN_IF_ERROR(device.status());
  if (p.do_dtype == DType::fp64) return launch<double>(p, ctx.stream);
  return launch<float>(p, ctx.stream);
}

}  // namespace recops::ops::chunk_bwd_dv_local_ns
