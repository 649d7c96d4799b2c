// complete_cumsum/cuda/launch.cu: workspace, dtype switch, the launch sequence (one memset of the
// tile states, one scan launch; a fill launch instead when n = 0) and, with validation, the one
// synchronising read of the overflow word.
#include <cstdint>
#include <string>

#include "core/cuda/check.h"
#include "core/cuda/launch.h"
#include "ops/jagged/cumsum/cuda/kernels.cuh"
#include "ops/jagged/cumsum/impls.h"

namespace recops::ops {
namespace {

using scan_cuda::kThreads;
using scan_cuda::kTile;
using scan_cuda::Workspace;

const char* op_name(CumsumKind k) {
  return k == CumsumKind::complete    ? "complete_cumsum"
         : k == CumsumKind::exclusive ? "exclusive_cumsum"
                                      : "inclusive_cumsum";
}

int64_t num_tiles(const CumsumParams& p) {
  return (p.R * p.n + kTile - 1) / kTile;
}

// Multiplier and shift of scan_cuda::FastDiv for 1 <= d < 2^31.
scan_cuda::FastDiv make_fast_div(uint32_t d) {
  int s = 0;
  while ((uint64_t{1} << s) < d) ++s;  // s = ceil(log2 d)
  const uint64_t m = (((uint64_t{1} << s) - d) << 32) / d + 1;
  return scan_cuda::FastDiv{static_cast<unsigned int>(m), s, d};
}

template <class In, class Out, bool kContiguousIn>
Status launch_scan(const scan_cuda::Args& a, const char* op, void* stream) {
  auto* kernel = &scan_cuda::cumsum_kernel<In, Out, kContiguousIn>;
  return RECOPS_LAUNCH_KERNEL(op, kernel, dim3(static_cast<unsigned>(a.num_tiles)), dim3(kThreads),
                              0, stream, a);
}

template <class In, class Out>
Status launch_scan(const scan_cuda::Args& a, bool contiguous, const char* op, void* stream) {
  return contiguous ? launch_scan<In, Out, true>(a, op, stream)
                    : launch_scan<In, Out, false>(a, op, stream);
}

template <class Out>
Status launch_zero_column(const CumsumParams& p, const char* op, void* stream) {
  auto* kernel = &scan_cuda::zero_first_column_kernel<Out>;
  unsigned grid = 1;
  RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(
      reinterpret_cast<const void*>(kernel), kThreads, 0, (p.R + kThreads - 1) / kThreads, &grid));
  return RECOPS_LAUNCH_KERNEL(op, kernel, dim3(grid), dim3(kThreads), 0, stream,
                              static_cast<Out*>(p.out), p.R, p.out_row_stride);
}

Status clear_states(void* workspace, size_t bytes, void* stream) {
  RECOPS_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(workspace, 0, bytes, static_cast<cudaStream_t>(stream)));
  return Status::Ok();
}

Status read_overflow_word(unsigned long long* host, const unsigned long long* device,
                          void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  RECOPS_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host, device, sizeof(*host), cudaMemcpyDeviceToHost, s));
  RECOPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  return Status::Ok();
}

}  // namespace

size_t cumsum_cuda_workspace_bytes(const CumsumParams& p) {
  if (p.R <= 0 || p.n <= 0) return 0;
  return static_cast<size_t>(Workspace::total_bytes(num_tiles(p)));
}

Status cumsum_cuda(const CumsumParams& p, const Context& ctx) {
  const char* op = op_name(p.kind);
  const bool complete = p.kind == CumsumKind::complete;
  if (p.R <= 0) return Status::Ok();
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  if (p.n <= 0) {  // complete: a column of zeros per row; exclusive/inclusive: empty
    if (!complete) return Status::Ok();
    return p.out_int64 ? launch_zero_column<int64_t>(p, op, ctx.stream)
                       : launch_zero_column<int32_t>(p, op, ctx.stream);
  }

  const int64_t tiles = num_tiles(p);
  if (tiles > 0x7fffffff)
    return Status(StatusCode::out_of_range,
                  detail::cat(op, ": ", p.R * p.n, " elements need ", tiles, " tiles of ", kTile,
                              "; the CUDA scan handles at most 2^31 - 1 tiles"));
  const size_t need = static_cast<size_t>(Workspace::total_bytes(tiles));
  if (ctx.workspace == nullptr || ctx.workspace_bytes < need)
    return Status(StatusCode::invalid_argument,
                  detail::cat(op, ": the CUDA scan needs ", need, " bytes of workspace, got ",
                              ctx.workspace_bytes));

  char* ws = static_cast<char*>(ctx.workspace);
  scan_cuda::Args a{};
  a.in = p.in;
  a.out = p.out;
  a.R = p.R;
  a.n = p.n;
  a.N = p.R * p.n;
  a.in_row_stride = p.in_row_stride;
  a.in_stride = p.in_stride;
  a.out_row_stride = p.out_row_stride;
  a.num_tiles = tiles;
  a.div_n = make_fast_div(static_cast<uint32_t>(p.n < kTile ? p.n : 1));
  a.complete = complete;
  a.exclusive = p.kind == CumsumKind::exclusive;
  a.validate = p.validate && !p.out_int64;
  a.counter = reinterpret_cast<unsigned long long*>(ws);
  a.first_bad = reinterpret_cast<unsigned long long*>(ws + 8);
  a.status = reinterpret_cast<int*>(ws + Workspace::status_offset());
  a.agg = reinterpret_cast<unsigned long long*>(ws + Workspace::agg_offset(tiles));
  a.incl = reinterpret_cast<unsigned long long*>(ws + Workspace::incl_offset(tiles));
  const bool contiguous = p.in_stride == 1 && (p.R == 1 || p.in_row_stride == p.n);

  RECOPS_RETURN_IF_ERROR(
      clear_states(ws, static_cast<size_t>(Workspace::zeroed_bytes(tiles)), ctx.stream));
  // Initialised, not assigned: Status is [[nodiscard]] and so is the reference operator= returns.
  const Status st =
      p.in_int64 ? (p.out_int64 ? launch_scan<int64_t, int64_t>(a, contiguous, op, ctx.stream)
                                : launch_scan<int64_t, int32_t>(a, contiguous, op, ctx.stream))
                 : (p.out_int64 ? launch_scan<int32_t, int64_t>(a, contiguous, op, ctx.stream)
                                : launch_scan<int32_t, int32_t>(a, contiguous, op, ctx.stream));
  RECOPS_RETURN_IF_ERROR(st);
  if (!a.validate) return Status::Ok();

  unsigned long long word = 0;
  RECOPS_RETURN_IF_ERROR(read_overflow_word(&word, a.first_bad, ctx.stream));
  if (word == 0) return Status::Ok();
  const int64_t pos = static_cast<int64_t>(~word);
  const int64_t width = p.n + (complete ? 1 : 0);
  const int64_t r = pos / width, i = pos - r * width;
  return Status(StatusCode::out_of_range,
                detail::cat(op, ": the sum at output [", r, ", ", i,
                            "] does not fit the int32 output (sums accumulate in int64); use "
                            "out_dtype int64"));
}

}  // namespace recops::ops
