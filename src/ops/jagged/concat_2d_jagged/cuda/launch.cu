// jagged/concat_2d_jagged/cuda/launch.cu: word size, grid, checked launches. The word is the
// largest power of two <= 16 bytes dividing the row width in bytes, every base address and every
// row/batch stride in bytes (so every word access is aligned). One launch per destination.
#include <algorithm>
#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/jagged/concat_2d_jagged/cuda/kernel.cuh"
#include "ops/jagged/concat_2d_jagged/cuda/tiles.h"
#include "ops/jagged/concat_2d_jagged/impls.h"

namespace recops::ops::concat_2d_jagged_ns {
namespace {
// Largest power of two <= 16 dividing every value.
int word_bytes(std::initializer_list<uint64_t> vals) {
  int w = 16;
  for (uint64_t v : vals)
    while (w > 1 && v % static_cast<uint64_t>(w) != 0) w /= 2;
  return w;
}

uint64_t addr(const void* ptr) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ptr));
}

Status launch(const Params& p, int dest, void* dst, int64_t rows, void* stream) {
  if (rows == 0) return Status::Ok();
  const uint64_t it = static_cast<uint64_t>(p.itemsize);
  const int w = word_bytes(
      {static_cast<uint64_t>(p.D) * it, addr(dst), addr(p.a.data), addr(p.b.data), addr(p.grad),
       static_cast<uint64_t>(p.a.row_stride) * it, static_cast<uint64_t>(p.a.batch_stride) * it,
       static_cast<uint64_t>(p.b.row_stride) * it, static_cast<uint64_t>(p.b.batch_stride) * it,
       static_cast<uint64_t>(p.grad_row_stride) * it});
  const int64_t words = p.D * p.itemsize / w;
  int tpr = 1;  // lanes per row: the row's words, rounded up to a power of two, at most 32
  while (tpr < 32 && tpr < words) tpr *= 2;
  const int64_t rows_per_block = kThreads / tpr;
  const int64_t blocks =
      std::min<int64_t>((rows + rows_per_block - 1) / rows_per_block, kMaxBlocks);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kThreads);
  switch (w) {
    case 16:
      return RECOPS_LAUNCH_KERNEL("concat_2d_jagged", copy_rows_kernel<16>, grid, block, 0, stream,
                                  p, dest, dst, rows, tpr);
    case 8:
      return RECOPS_LAUNCH_KERNEL("concat_2d_jagged", copy_rows_kernel<8>, grid, block, 0, stream,
                                  p, dest, dst, rows, tpr);
    case 4:
      return RECOPS_LAUNCH_KERNEL("concat_2d_jagged", copy_rows_kernel<4>, grid, block, 0, stream,
                                  p, dest, dst, rows, tpr);
    case 2:
      return RECOPS_LAUNCH_KERNEL("concat_2d_jagged", copy_rows_kernel<2>, grid, block, 0, stream,
                                  p, dest, dst, rows, tpr);
    default:
      return RECOPS_LAUNCH_KERNEL("concat_2d_jagged", copy_rows_kernel<1>, grid, block, 0, stream,
                                  p, dest, dst, rows, tpr);
  }
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  if (p.D * p.itemsize == 0) return Status::Ok();
  if (!p.backward) return launch(p, 0, p.out, p.out_rows, ctx.stream);
  RECOPS_RETURN_IF_ERROR(launch(p, 1, p.a.grad, p.a.rows, ctx.stream));
  return launch(p, 2, p.b.grad, p.b.rows, ctx.stream);
}

}  // namespace recops::ops::concat_2d_jagged_ns
