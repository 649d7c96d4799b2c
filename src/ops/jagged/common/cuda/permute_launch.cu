// ops/jagged/common/cuda/permute_launch.cu: the permute ops' CUDA path (permute_params.h):
// workspace layout, grids, checked launches (architecture.md §2 step 5). Steps, all on the
// caller's stream and without a host synchronisation: the row sums, their inclusive scan (CUB)
// into in_off, the permuted row sums and permuted_lengths, their scan into out_off, then one copy
// per payload (values, weights). Workspace (int64 elements, then CUB's temp storage): rowlen [T],
// in_off [T+1], permlen [P], out_off [P+1].
#include <algorithm>
#include <cub/device/device_scan.cuh>

#include "core/cuda/launch.h"
#include "ops/jagged/common/cuda/permute_kernel.cuh"
#include "ops/jagged/common/permute_params.h"

namespace recops::ops {
namespace {
using namespace permute_dev;
constexpr size_t kAlign = 256;

size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

size_t arrays_bytes(const PermuteParams& p) {
  return align_up(static_cast<size_t>(2 * p.T + 1 + 2 * p.P + 1) * sizeof(int64_t));
}

size_t scan_temp_bytes(int64_t n) {
  size_t bytes = 0;
  cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<const int64_t*>(nullptr),
                                static_cast<int64_t*>(nullptr), n);
  return bytes;
}

dim3 grid_for(int64_t work) {
  return dim3(static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((work + kThreads - 1) / kThreads, kMaxBlocks))));
}

Status scan(const int64_t* in, int64_t* out, int64_t n, void* temp, void* stream) {
  if (n == 0) return Status::Ok();
  size_t bytes = scan_temp_bytes(n);
  const cudaError_t e =
      cub::DeviceScan::InclusiveSum(temp, bytes, in, out, n, static_cast<cudaStream_t>(stream));
  RECOPS_CHECK(e == cudaSuccess,
               "permute: cub::DeviceScan::InclusiveSum failed: ", cudaGetErrorString(e));
  return Status::Ok();
}

template <class E>
Status copy(const PermuteParams& p, const PermutePayload& pl, const int64_t* in_off,
            const int64_t* out_off, void* stream) {
  const int64_t n = p.R * pl.D;
  const dim3 grid(static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((n + kTile - 1) / kTile, kMaxBlocks))));
  return RECOPS_LAUNCH_KERNEL("permute_copy", copy_kernel<E>, grid, dim3(kThreads), 0, stream, p,
                              pl, in_off, out_off);
}
}  // namespace

size_t permute_cuda_workspace_bytes(const PermuteParams& p) {
  return arrays_bytes(p) + std::max(scan_temp_bytes(p.T), scan_temp_bytes(p.P));
}

Status permute_run_cuda(const PermuteParams& p, const Context& ctx) {
  void* stream = ctx.stream;
  auto* rowlen = static_cast<int64_t*>(p.workspace);
  int64_t* in_off = rowlen + p.T;
  int64_t* permlen = in_off + p.T + 1;
  int64_t* out_off = permlen + p.P;
  void* temp = static_cast<char*>(p.workspace) + arrays_bytes(p);
  const dim3 block(kThreads);
  if (p.B > 1)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL("permute_row_sums", row_sums_kernel<true>,
                                                grid_for(p.T * 32), block, 0, stream, p, rowlen,
                                                in_off, out_off));
  else
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL("permute_row_sums", row_sums_kernel<false>,
                                                grid_for(p.T), block, 0, stream, p, rowlen, in_off,
                                                out_off));
  RECOPS_RETURN_IF_ERROR(scan(rowlen, in_off + 1, p.T, temp, stream));
  RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL("permute_lengths", permuted_lengths_kernel,
                                              grid_for(std::max(p.P, p.P * p.B)), block, 0, stream,
                                              p, in_off, permlen));
  RECOPS_RETURN_IF_ERROR(scan(permlen, out_off + 1, p.P, temp, stream));
  for (int k = 0; k < p.num_payloads; ++k) {
    const PermutePayload& pl = p.payload[k];
    if (p.R == 0 || pl.D == 0) continue;
    switch (pl.elem_size) {
      case 1: RECOPS_RETURN_IF_ERROR(copy<uint8_t>(p, pl, in_off, out_off, stream)); break;
      case 2: RECOPS_RETURN_IF_ERROR(copy<uint16_t>(p, pl, in_off, out_off, stream)); break;
      case 4: RECOPS_RETURN_IF_ERROR(copy<uint32_t>(p, pl, in_off, out_off, stream)); break;
      case 8:
        RECOPS_RETURN_IF_ERROR(copy<unsigned long long>(p, pl, in_off, out_off, stream));
        break;
      default: return Status(StatusCode::internal, "permute: cuda_sm80: bad element size");
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
