// ops/jagged/common/cuda/jagged_dense_ew_launch.cu: cuda_sm80 of the jagged-dense elementwise ops
// (it also serves sm90: the ops are memory-bound and need no Hopper feature). Dtype switch, vector
// width (16 bytes when every pointer, the row width and every stride allow it, else one element),
// lanes per row (the smallest power of two covering the row's vectors, at most 32), grid and
// checked launches (common/cuda/jagged_dense_ew_kernel.cuh). Not tuned yet: 256 threads, one
// block per tile up to 2^20 blocks, then grid-stride.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/bits.cuh"
#include "core/cuda/launch.h"
#include "core/cuda/runtime.h"
#include "ops/jagged/common/cuda/jagged_dense_ew_kernel.cuh"
#include "ops/jagged/common/jagged_dense_ew.h"

namespace recops::ops {
namespace {

constexpr const char* kOpName = "jagged_dense_elementwise";
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

template <class T, int V>
Status launch_vec(const JdEwParams& p, const Context& ctx) {
  using namespace jd_ew_dev;
  DevArgs<T> a{};
  a.a = static_cast<const T*>(p.a);
  a.x = static_cast<const T*>(p.x);
  a.y = static_cast<const T*>(p.y);
  a.out = static_cast<T*>(p.out);
  a.dy = static_cast<T*>(p.dy);
  a.offsets =
      core::cuda::ClampedOffsets{p.seq_offsets, p.offsets_stride, p.total_L, p.offsets_int64};
  a.mode = static_cast<int>(p.mode);
  a.B = p.B;
  a.S = p.S;
  a.D = p.D;
  a.total_L = p.total_L;
  a.a_row_stride = p.a_row_stride;
  a.x_row_stride = p.x_row_stride;
  a.y_batch_stride = p.y_batch_stride;
  a.y_row_stride = p.y_row_stride;
  const int64_t vecs = (p.D + V - 1) / V;
  int lanes_log2 = 0;
  while (lanes_log2 < 5 && (int64_t{1} << lanes_log2) < vecs) ++lanes_log2;
  a.lanes_log2 = lanes_log2;
  a.tile_rows = kThreads >> lanes_log2;
  auto go = [&](auto* kernel, int64_t rows) -> Status {
    if (rows <= 0) return Status::Ok();
    a.num_tiles = (rows + a.tile_rows - 1) / a.tile_rows;
    const unsigned grid = static_cast<unsigned>(std::min(a.num_tiles, kMaxBlocks));
    return RECOPS_LAUNCH_KERNEL(kOpName, kernel, dim3(grid), dim3(kThreads), 0, ctx.stream, a);
  };
  RECOPS_RETURN_IF_ERROR(go(&jagged_kernel<T, V>, p.total_L));
  if (p.mode == JdEwMode::mul_bwd) RECOPS_RETURN_IF_ERROR(go(&dy_kernel<T, V>, p.B * p.S));
  return Status::Ok();
}

template <class T>
Status launch(const JdEwParams& p, const Context& ctx) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const int64_t es = sizeof(T);
  const bool bwd = p.mode == JdEwMode::mul_bwd;
  auto bytes = [](const void* ptr) { return reinterpret_cast<uint64_t>(ptr); };
  const int unit = core::cuda::pick_unit_bytes(
      es, {bytes(p.a), bytes(p.y), bytes(p.out), bwd ? bytes(p.x) : 0, bwd ? bytes(p.dy) : 0,
           static_cast<uint64_t>(p.D * es), static_cast<uint64_t>(p.a_row_stride * es),
           static_cast<uint64_t>(p.x_row_stride * es), static_cast<uint64_t>(p.y_batch_stride * es),
           static_cast<uint64_t>(p.y_row_stride * es)});
  if (unit == 16) return launch_vec<T, kVec>(p, ctx);
  return launch_vec<T, 1>(p, ctx);
}

}  // namespace

Status jd_ew_cuda(const JdEwParams& p, const Context& ctx) {
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  switch (p.dtype) {
    case DType::fp64: return launch<double>(p, ctx);
    case DType::fp32: return launch<float>(p, ctx);
    case DType::fp16: return launch<__half>(p, ctx);
    case DType::bf16: return launch<__nv_bfloat16>(p, ctx);
    default:
      return Status(StatusCode::internal, "jagged_dense_elementwise: cuda_sm80 got a bad dtype");
  }
}

}  // namespace recops::ops
