// ops/jagged/common/cuda/row_copy_launch.cu: cuda_sm80 of both conversions: the configuration
// (tuned or default), unit width choice, lanes per row, grid, checked launch of the op's kernel
// (common/cuda/to_dense_kernel.cuh, common/cuda/to_jagged_kernel.cuh).
#include <cstdint>

#include "core/cuda/bits.cuh"
#include "core/cuda/launch.h"
#include "ops/jagged/common/row_copy.h"
#include "ops/jagged/common/cuda/to_jagged_kernel.cuh"
#include "ops/jagged/common/cuda/to_dense_kernel.cuh"

namespace recops::ops {
namespace {

template <int kBytes, int kRowsPerThread>
Status launch(const RowCopyParams& p, int64_t rows, const core::RowCopyCudaLaunch& cfg,
              const Context& ctx) {
  using U = core::cuda::Unit<kBytes>;
  const int64_t es = p.elem_size;
  row_copy_dev::Args<U> a{};
  a.src = static_cast<const U*>(p.src);
  a.dst = static_cast<U*>(p.dst);
  a.offsets =
      core::cuda::ClampedOffsets{p.seq_offsets, p.offsets_stride, p.total_L, p.offsets_int64};
  a.B = p.B;
  a.S = p.S;
  a.total_L = p.total_L;
  a.W = p.D * es / kBytes;
  a.jagged_row_stride = p.jagged_row_stride * es / kBytes;
  a.dense_batch_stride = p.dense_batch_stride * es / kBytes;
  a.dense_row_stride = p.dense_row_stride * es / kBytes;
  a.lanes_log2 = core::row_copy_lanes_log2(a.W, cfg.units_per_lane);
  a.tile_rows = int64_t{kRowsPerThread} * (cfg.threads >> a.lanes_log2);
  a.num_tiles = (rows + a.tile_rows - 1) / a.tile_rows;
  a.pad = core::cuda::fill_pattern<kBytes>(p.padding_bits, es);  // zeros for to_jagged

  auto* kernel = p.dir == RowCopyDir::to_dense
                     ? &j2pd_cuda::jagged_to_padded_dense_kernel<U, kRowsPerThread>
                     : &d2j_cuda::dense_to_jagged_kernel<U, kRowsPerThread>;
  unsigned grid = core::row_copy_tile_grid(a.num_tiles);
  if (cfg.persistent)
    RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(kernel),
                                                       cfg.threads, 0, a.num_tiles, &grid));
  return RECOPS_LAUNCH_KERNEL(row_copy_op(p.dir), kernel, dim3(grid),
                              dim3(static_cast<unsigned>(cfg.threads)), 0, ctx.stream, a);
}

}  // namespace

Status row_copy_cuda(const RowCopyParams& p, const Context& ctx) {
  const bool to_dense = p.dir == RowCopyDir::to_dense;
  const int64_t rows = to_dense ? p.B * p.S : p.total_L;  // output rows
  if (rows <= 0 || p.D == 0) return Status::Ok();         // empty out: no launch
  const char* op = row_copy_op(p.dir);
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  const int64_t es = p.elem_size;
  // The source is read only when some row is copied (to_dense: total_L > 0; to_jagged: S > 0 and
  // B > 0); otherwise its pointer and strides do not constrain the unit.
  const bool reads = to_dense ? p.total_L > 0 : p.S > 0 && p.B > 0;
  const bool jagged_counts = reads || !to_dense;  // the jagged side is read or written
  const bool dense_counts = reads || to_dense;
  static const std::vector<TuneConfig> candidates = core::row_copy_cuda_candidates();
  TuneConfig tc;
  RECOPS_RETURN_IF_ERROR(core::resolve_row_copy_cuda(op, candidates, p.device_index, p.dtype,
                                                     p.D * es, rows, ctx, &tc));
  const core::RowCopyCudaLaunch cfg = core::row_copy_cuda_launch(tc);
  const int unit = core::row_copy_unit_bytes(
      es,
      core::cuda::pick_unit_bytes(
          es, {reads ? reinterpret_cast<uint64_t>(p.src) : 0, reinterpret_cast<uint64_t>(p.dst),
               static_cast<uint64_t>(p.D * es),
               jagged_counts ? static_cast<uint64_t>(p.jagged_row_stride * es) : 0,
               dense_counts ? static_cast<uint64_t>(p.dense_batch_stride * es) : 0,
               dense_counts ? static_cast<uint64_t>(p.dense_row_stride * es) : 0}),
      cfg);
  return core::cuda::with_row_copy_instance(op, unit, cfg.rows_per_thread, [&](auto b, auto r) {
    return launch<decltype(b)::value, decltype(r)::value>(p, rows, cfg, ctx);
  });
}

}  // namespace recops::ops
