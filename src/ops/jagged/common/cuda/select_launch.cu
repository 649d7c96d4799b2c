// ops/jagged/common/cuda/select_launch.cu: the segment-select ops' CUDA path (select_params.h):
// workspace layout, dtype switch, grids, checked launches (architecture.md §2 step 5). Both
// directions: the input lengths, their CUB scan into in_off, the selected lengths (the forward
// also writes out_lengths, the backward the (input segment, output segment) pairs), their scan
// into out_off; then the forward's segment copy, or the backward's stable CUB radix sort of the
// pairs by input segment and the segment gather. No host synchronisation. Workspace (int64
// elements, then CUB's temp storage for the scans and the sort): lens_in [F*B], in_off [F*B+1],
// lens_out [F*K], out_off [F*K+1]; backward also keys_in, keys_out, vals_in, vals_out [F*K each].
#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "core/cuda/launch.h"
#include "ops/jagged/common/cuda/select_kernel.cuh"
#include "ops/jagged/common/cuda/select_tiles.h"
#include "ops/jagged/common/select_params.h"

namespace recops::ops {
namespace {
using namespace select_dev;
constexpr size_t kAlign = 256;

size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// Bits that hold every key in [0, n).
int key_bits(int64_t B) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) < B) ++bits;
  return bits;
}

size_t sort_temp_bytes(const SelectParams& p) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
      static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), p.F * p.K, 0,
      key_bits(p.F * p.B));
  return bytes;
}

size_t scan_temp_bytes(int64_t n) {
  size_t bytes = 0;
  cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<const int64_t*>(nullptr),
                                static_cast<int64_t*>(nullptr), n);
  return bytes;
}

size_t offsets_bytes(const SelectParams& p) {
  return align_up(static_cast<size_t>(2 * p.F * p.B + 1 + 2 * p.F * p.K + 1) * sizeof(int64_t));
}

Status scan(const int64_t* in, int64_t* out, int64_t n, void* temp, void* stream) {
  if (n == 0) return Status::Ok();
  size_t bytes = scan_temp_bytes(n);
  const cudaError_t e =
      cub::DeviceScan::InclusiveSum(temp, bytes, in, out, n, static_cast<cudaStream_t>(stream));
  RECOPS_CHECK(e == cudaSuccess,
               "select: cub::DeviceScan::InclusiveSum failed: ", cudaGetErrorString(e));
  return Status::Ok();
}

dim3 flat_grid(int64_t n) {
  return dim3(static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks))));
}

size_t pairs_bytes(const SelectParams& p) {
  return align_up(static_cast<size_t>(4 * p.F * p.K) * sizeof(int64_t));
}

dim3 row_grid(int64_t rows) {
  constexpr int64_t kWarps = kThreads / 32;
  return dim3(static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((rows + kWarps - 1) / kWarps, kMaxBlocks))));
}

// Mean elements per segment (the kernel choice, select_tiles.h).
bool long_segments(int64_t rows, int64_t D, int64_t segments) {
  return segments > 0 && rows / segments * D > kSegmentElems;
}

template <class E>
Status copy_rows(const SelectParams& p, const int64_t* in_off, const int64_t* out_off,
                 void* stream) {
  if (long_segments(p.out_rows, p.D, p.F * p.K))
    return RECOPS_LAUNCH_KERNEL("select_rows", select_by_row_kernel<E>, row_grid(p.out_rows),
                                dim3(kThreads), 0, stream, p, in_off, out_off);
  return RECOPS_LAUNCH_KERNEL("select_rows", select_rows_kernel<E>, row_grid(p.F * p.K),
                              dim3(kThreads), 0, stream, p, in_off, out_off);
}

template <class T>
Status gather(const SelectParams& p, const int64_t* in_off, const int64_t* out_off,
              const int64_t* keys, const int64_t* vals, void* stream) {
  return RECOPS_LAUNCH_KERNEL("select_gather", gather_grad_kernel<T>,
                              row_grid((p.total_L + kGradRows - 1) / kGradRows), dim3(kThreads), 0,
                              stream, p, in_off, out_off, keys, vals);
}
}  // namespace

size_t select_cuda_workspace_bytes(const SelectParams& p) {
  const size_t scans = std::max(scan_temp_bytes(p.F * p.B), scan_temp_bytes(p.F * p.K));
  return offsets_bytes(p) +
         (p.backward ? pairs_bytes(p) + std::max(sort_temp_bytes(p), scans) : scans);
}

Status select_run_cuda(const SelectParams& p, const Context& ctx) {
  const char* op = p.backward ? "select (backward)" : "select";
  void* stream = ctx.stream;
  auto* base = static_cast<char*>(p.workspace);
  auto* lens_in = reinterpret_cast<int64_t*>(base);
  int64_t* in_off = lens_in + p.F * p.B;
  int64_t* lens_out = in_off + p.F * p.B + 1;
  int64_t* out_off = lens_out + p.F * p.K;
  int64_t *keys_in = nullptr, *keys_out = nullptr, *vals_in = nullptr, *vals_out = nullptr;
  if (p.backward) {
    keys_in = reinterpret_cast<int64_t*>(base + offsets_bytes(p));
    keys_out = keys_in + p.F * p.K;
    vals_in = keys_out + p.F * p.K;
    vals_out = vals_in + p.F * p.K;
  }
  void* temp = base + offsets_bytes(p) + (p.backward ? pairs_bytes(p) : 0);
  RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, input_lengths_kernel, flat_grid(p.F * p.B),
                                              dim3(kThreads), 0, stream, p, lens_in, in_off,
                                              out_off));
  RECOPS_RETURN_IF_ERROR(scan(lens_in, in_off + 1, p.F * p.B, temp, stream));
  if (p.F * p.K > 0)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, selected_lengths_kernel, flat_grid(p.F * p.K),
                                                dim3(kThreads), 0, stream, p, in_off, lens_out,
                                                keys_in, vals_in));
  RECOPS_RETURN_IF_ERROR(scan(lens_out, out_off + 1, p.F * p.K, temp, stream));
  if (!p.backward) {
    if (p.out_rows == 0 || p.D == 0) return Status::Ok();
    switch (dtype_size(p.dtype)) {
      case 1: return copy_rows<uint8_t>(p, in_off, out_off, stream);
      case 2: return copy_rows<uint16_t>(p, in_off, out_off, stream);
      case 4: return copy_rows<uint32_t>(p, in_off, out_off, stream);
      case 8: return copy_rows<unsigned long long>(p, in_off, out_off, stream);
      default: return Status(StatusCode::internal, "select: cuda_sm80: bad element size");
    }
  }
  if (p.F * p.K > 0) {
    size_t temp_bytes = sort_temp_bytes(p);
    const cudaError_t e = cub::DeviceRadixSort::SortPairs(
        temp, temp_bytes, keys_in, keys_out, vals_in, vals_out, p.F * p.K, 0, key_bits(p.F * p.B),
        static_cast<cudaStream_t>(stream));
    RECOPS_CHECK(e == cudaSuccess, op,
                 ": cub::DeviceRadixSort::SortPairs failed: ", cudaGetErrorString(e));
  }
  const int64_t* keys = keys_out;
  const int64_t* vals = vals_out;
  switch (p.dtype) {
    case DType::fp64: return gather<double>(p, in_off, out_off, keys, vals, stream);
    case DType::fp32: return gather<float>(p, in_off, out_off, keys, vals, stream);
    case DType::fp16: return gather<__half>(p, in_off, out_off, keys, vals, stream);
    case DType::bf16: return gather<__nv_bfloat16>(p, in_off, out_off, keys, vals, stream);
    default:
      return Status(StatusCode::internal,
                    "jagged_index_select_bwd: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops
