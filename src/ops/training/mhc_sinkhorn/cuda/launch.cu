// training/mhc_sinkhorn/cuda/launch.cu: dtype and n switch, grid and checked launch
// (architecture.md §2 step 5), and what the CUDA implementation accepts.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/launch.h"
#include "core/cuda/runtime.h"
#include "ops/training/mhc_sinkhorn/cuda/kernel.cuh"
#include "ops/training/mhc_sinkhorn/cuda/tiles.h"
#include "ops/training/mhc_sinkhorn/impls.h"

namespace recops::ops::mhc_sinkhorn_ns {
namespace {
const char* op_name(const Params& p) {
  return p.backward ? "mhc_sinkhorn_bwd" : "mhc_sinkhorn";
}

int64_t elem_bytes(const Params& p) {
  return p.dtype == DType::fp64 ? 8 : 4;
}

// The generic backward's block: threads and checkpoints such that each thread's (2 + 2·cap)·n²
// elements fit kGenericSmemBytes. False when even one thread with cap = 1 does not fit.
bool generic_bwd_config(const Params& p, int* threads, int64_t* cap) {
  const int64_t mat = p.n * p.n * elem_bytes(p);
  const int64_t per_thread_cap1 = 4 * mat;
  if (per_thread_cap1 > kGenericSmemBytes) return false;
  const int64_t t = std::min<int64_t>(kGenericThreads, kGenericSmemBytes / per_thread_cap1);
  const int64_t c = (kGenericSmemBytes / (t * mat) - 2) / 2;  // >= 1 since t·4·mat <= budget
  *threads = static_cast<int>(t);
  *cap = std::clamp<int64_t>(c, 1, kGenericCap);
  return true;
}

unsigned grid_for(int64_t tokens, int threads) {
  return static_cast<unsigned>(std::min<int64_t>((tokens + threads - 1) / threads, kMaxBlocks));
}

template <class T, int D>
Status launch_fast(const Params& p, void* stream) {
  const dim3 grid(grid_for(p.tokens, kThreads)), block(kThreads);
  return RECOPS_LAUNCH_KERNEL(op_name(p), (sinkhorn_fast_kernel<T, D>), grid, block, 0, stream, p);
}

template <class T>
Status launch_generic(const Params& p, void* stream) {
  if (!p.backward) {
    const dim3 grid(grid_for(p.tokens, kThreads)), block(kThreads);
    return RECOPS_LAUNCH_KERNEL(op_name(p), (sinkhorn_generic_fwd_kernel<T>), grid, block, 0,
                                stream, p);
  }
  int threads = 0;
  int64_t cap = 0;
  if (!generic_bwd_config(p, &threads, &cap))
    return Status(StatusCode::internal, "mhc_sinkhorn_bwd: cuda_sm80 reached with n too large");
  const size_t smem = static_cast<size_t>(threads * (2 + 2 * cap) * p.n * p.n * elem_bytes(p));
  const dim3 grid(grid_for(p.tokens, threads)), block(static_cast<unsigned>(threads));
  return RECOPS_LAUNCH_KERNEL(op_name(p), (sinkhorn_generic_bwd_kernel<T>), grid, block, smem,
                              stream, p, cap);
}

template <class T>
Status launch_typed(const Params& p, void* stream) {
  switch (p.n) {
    case 1: return launch_fast<T, 1>(p, stream);
    case 2: return launch_fast<T, 2>(p, stream);
    case 3: return launch_fast<T, 3>(p, stream);
    case 4: return launch_fast<T, 4>(p, stream);
    case 5: return launch_fast<T, 5>(p, stream);
    case 6: return launch_fast<T, 6>(p, stream);
    case 7: return launch_fast<T, 7>(p, stream);
    case 8: return launch_fast<T, 8>(p, stream);
    default: return launch_generic<T>(p, stream);
  }
}
}  // namespace

std::string cuda_accepts(const Params& p) {
  if (p.backward && p.n > kMaxFastN) {
    int threads = 0;
    int64_t cap = 0;
    if (!generic_bwd_config(p, &threads, &cap))
      return "the backward's per-thread scratch (4·n² elements) exceeds 48 KB of shared memory "
             "at n = " +
             std::to_string(p.n);
  }
  return core::cuda::capability_reason(p.device_index, 80);
}

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.tokens == 0 || p.n == 0) return Status::Ok();  // the entry returns first; kept for safety
  switch (p.dtype) {
    case DType::fp64: return launch_typed<double>(p, ctx.stream);
    case DType::fp32: return launch_typed<float>(p, ctx.stream);
    default:
      return Status(StatusCode::internal, "mhc_sinkhorn: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::mhc_sinkhorn_ns
