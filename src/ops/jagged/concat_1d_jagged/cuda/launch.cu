// jagged/concat_1d_jagged/cuda/launch.cu: unit width, grid, checked launches of cuda/kernel.cuh.
// The forward is one launch (values and offsets); the backward one launch per non-empty gradient.
// The unit is 16 bytes when the destination's base is 16-byte aligned (outputs are contiguous),
// else one element; source alignment is checked per unit on the device.
#include <algorithm>
#include <cstdint>

#include "core/cuda/bits.cuh"
#include "core/cuda/launch.h"
#include "ops/jagged/concat_1d_jagged/cuda/kernel.cuh"
#include "ops/jagged/concat_1d_jagged/cuda/tiles.h"
#include "ops/jagged/concat_1d_jagged/impls.h"

namespace recops::ops::concat_1d_jagged_ns {
namespace {

dev::PartArgs part_args(const Params& p, const Part& x) {
  dev::PartArgs d{};
  d.data = static_cast<const char*>(x.data);
  d.offsets = core::cuda::ClampedOffsets{x.offsets, x.offsets_stride, x.total, p.offsets_int64};
  d.stride = x.stride;
  d.batch_stride = x.batch_stride;
  d.S = x.S;
  return d;
}

template <int kUnit, int kElem>
Status launch_as(const dev::Args& a, const Context& ctx) {
  constexpr int64_t V = kUnit / kElem;
  const int64_t tile = int64_t{kThreads} * V;
  int64_t blocks = (a.n + tile - 1) / tile;
  if (a.mode == 0) blocks = std::max<int64_t>(blocks, (a.B + 1 + kThreads - 1) / kThreads);
  blocks = std::clamp<int64_t>(blocks, 1, kMaxBlocks);
  const char* op = a.mode == 0 ? "concat_1d_jagged" : "concat_1d_jagged_bwd";
  auto* kernel = &dev::concat_1d_kernel<kUnit, kElem>;
  return RECOPS_LAUNCH_KERNEL(op, kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0,
                              ctx.stream, a);
}

template <int kElem>
Status launch_elem(const dev::Args& a, bool wide, const Context& ctx) {
  if (wide) return launch_as<16, kElem>(a, ctx);
  return launch_as<kElem, kElem>(a, ctx);
}

Status launch(const Params& p, dev::Args a, const Context& ctx) {
  // Nothing to write: an empty gradient (the forward always writes B + 1 >= 1 offsets).
  if (a.n == 0 && a.mode != 0) return Status::Ok();
  const bool wide = reinterpret_cast<uintptr_t>(a.dst) % 16 == 0;
  switch (p.itemsize) {
    case 1: return launch_elem<1>(a, wide, ctx);
    case 2: return launch_elem<2>(a, wide, ctx);
    case 4: return launch_elem<4>(a, wide, ctx);
    case 8: return launch_elem<8>(a, wide, ctx);
  }
  return Status(StatusCode::internal, detail::cat("concat_1d_jagged: element size ", p.itemsize,
                                                  " (expected 1, 2, 4 or 8 bytes)"));
}

}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  dev::Args a{};
  a.a = part_args(p, p.a);
  a.b = part_args(p, p.b);
  a.grad = static_cast<const char*>(p.grad);
  a.grad_stride = p.grad_stride;
  a.offsets_int64 = p.offsets_int64;
  a.B = p.B;
  if (!p.backward) {
    a.mode = 0;
    a.dst = static_cast<char*>(p.out);
    a.n = p.total;
    a.out_offsets = p.out_offsets;
    return launch(p, a, ctx);
  }
  a.out_offsets = nullptr;
  a.mode = 1;
  a.dst = static_cast<char*>(p.a.grad);
  a.n = p.a.total;
  RECOPS_RETURN_IF_ERROR(launch(p, a, ctx));
  a.mode = 2;
  a.dst = static_cast<char*>(p.b.grad);
  a.n = p.b.total;
  return launch(p, a, ctx);
}

}  // namespace recops::ops::concat_1d_jagged_ns
