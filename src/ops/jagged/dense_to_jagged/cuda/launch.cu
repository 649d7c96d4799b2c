// dense_to_jagged/cuda/launch.cu: the configuration (tuned or default), unit width choice, lanes
// per row, grid, checked launch.
#include <cstdint>

#include "core/cuda/bits.cuh"
#include "core/cuda/launch.h"
#include "ops/jagged/common/row_copy_tuning.h"
#include "ops/jagged/dense_to_jagged/cuda/kernels.cuh"
#include "ops/jagged/dense_to_jagged/impls.h"

namespace recops::ops {
namespace {

constexpr const char* kOp = "dense_to_jagged";

template <int kBytes, int kRowsPerThread>
Status launch(const DenseToJaggedParams& p, const core::RowCopyCudaLaunch& cfg,
              const Context& ctx) {
  using U = core::cuda::Unit<kBytes>;
  const int64_t es = p.elem_size;
  d2j_cuda::Args<U> a{};
  a.dense = static_cast<const U*>(p.dense);
  a.out = static_cast<U*>(p.out);
  a.offsets =
      core::cuda::ClampedOffsets{p.seq_offsets, p.offsets_stride, p.total_L, p.offsets_int64};
  a.B = p.B;
  a.S = p.S;
  a.total_L = p.total_L;
  a.W = p.D * es / kBytes;
  a.dense_batch_stride = p.dense_batch_stride * es / kBytes;
  a.dense_row_stride = p.dense_row_stride * es / kBytes;
  a.out_row_stride = p.out_row_stride * es / kBytes;
  a.lanes_log2 = core::row_copy_lanes_log2(a.W, cfg.units_per_lane);
  a.tile_rows = int64_t{kRowsPerThread} * (cfg.threads >> a.lanes_log2);
  a.num_tiles = (p.total_L + a.tile_rows - 1) / a.tile_rows;

  auto* kernel = &d2j_cuda::dense_to_jagged_kernel<U, kRowsPerThread>;
  unsigned grid = core::row_copy_tile_grid(a.num_tiles);
  if (cfg.persistent)
    RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(kernel),
                                                       cfg.threads, 0, a.num_tiles, &grid));
  return RECOPS_LAUNCH_KERNEL(kOp, kernel, dim3(grid), dim3(static_cast<unsigned>(cfg.threads)), 0,
                              ctx.stream, a);
}

const std::vector<TuneConfig>& candidates() {
  static const std::vector<TuneConfig> c = core::row_copy_cuda_candidates();
  return c;
}

}  // namespace

std::vector<TuneConfig> dense_to_jagged_cuda_candidates() {
  return candidates();
}

Status dense_to_jagged_cuda(const DenseToJaggedParams& p, const Context& ctx) {
  if (p.total_L <= 0 || p.D == 0) return Status::Ok();  // empty out: no launch
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  const int64_t es = p.elem_size;
  // With S = 0 dense is never read, so its pointer and strides do not constrain the unit.
  const bool reads = p.S > 0 && p.B > 0;
  TuneConfig tc;
  RECOPS_RETURN_IF_ERROR(core::resolve_row_copy_cuda(kOp, candidates(), p.device_index, p.dtype,
                                                     p.D * es, p.total_L, ctx, &tc));
  const core::RowCopyCudaLaunch cfg = core::row_copy_cuda_launch(tc);
  const int unit = core::row_copy_unit_bytes(
      es,
      core::cuda::pick_unit_bytes(
          es, {reads ? reinterpret_cast<uint64_t>(p.dense) : 0, reinterpret_cast<uint64_t>(p.out),
               static_cast<uint64_t>(p.D * es),
               reads ? static_cast<uint64_t>(p.dense_batch_stride * es) : 0,
               reads ? static_cast<uint64_t>(p.dense_row_stride * es) : 0,
               static_cast<uint64_t>(p.out_row_stride * es)}),
      cfg);
  return core::cuda::with_row_copy_instance(kOp, unit, cfg.rows_per_thread, [&](auto b, auto r) {
    return launch<decltype(b)::value, decltype(r)::value>(p, cfg, ctx);
  });
}

}  // namespace recops::ops
