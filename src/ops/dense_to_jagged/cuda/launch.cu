// dense_to_jagged/cuda/launch.cu: the configuration (tuned or default), unit width choice, lanes
// per row, grid, checked launch.
#include <algorithm>
#include <cstdint>

#include "core/cuda/bits.cuh"
#include "core/cuda/launch.h"
#include "core/row_copy_tuning.h"
#include "ops/dense_to_jagged/cuda/kernels.cuh"
#include "ops/dense_to_jagged/impls.h"

namespace recops::ops {
namespace {

constexpr const char* kOp = "dense_to_jagged";

struct Launch {
  int threads;
  int rows_per_thread;
  int units_per_lane;
  bool dense_walk;
};

template <int kBytes, int kRowsPerThread>
Status launch(const DenseToJaggedParams& p, const Launch& cfg, const Context& ctx) {
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
  a.lanes_log2 = cfg.units_per_lane == 2 ? core::cuda::lanes_log2_for(a.W)
                                         : core::row_copy_lanes_log2(a.W, cfg.units_per_lane);
  a.tile_rows = int64_t{kRowsPerThread} * (cfg.threads >> a.lanes_log2);
  // The dense walk (no search, work over the (B, S) grid) only when a tuning file asks for it
  // (config dense_walk = 1, a tune candidate): its one H200 measurement (815e2d52b57d) was of a
  // version that zeroed rows past S serially (4x slower on S3); the fixed version is unmeasured, so
  // the default stays the jagged walk measured at 3b808b043594.
  const bool dense_walk = cfg.dense_walk && p.B > 0 && p.S > 0;
  const int64_t rows = dense_walk ? p.B * p.S : p.total_L;
  a.num_tiles = (rows + a.tile_rows - 1) / a.tile_rows;

  auto* kernel = dense_walk ? &d2j_cuda::dense_to_jagged_dense_walk_kernel<U, kRowsPerThread>
                            : &d2j_cuda::dense_to_jagged_kernel<U, kRowsPerThread>;
  unsigned grid = 1;
  RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(kernel),
                                                     cfg.threads, 0, a.num_tiles, &grid));
  return RECOPS_LAUNCH_KERNEL(kOp, kernel, dim3(grid), dim3(static_cast<unsigned>(cfg.threads)), 0,
                              ctx.stream, a);
}

template <int kBytes>
Status launch(const DenseToJaggedParams& p, const Launch& cfg, const Context& ctx) {
  return cfg.rows_per_thread == 8 ? launch<kBytes, 8>(p, cfg, ctx) : launch<kBytes, 4>(p, cfg, ctx);
}

// The row-copy candidates, plus the dense walk at the default and at 8 rows per thread.
const std::vector<TuneConfig>& candidates() {
  static const std::vector<TuneConfig> c = [] {
    std::vector<TuneConfig> v = core::row_copy_cuda_candidates();
    for (int rows : {4, 8}) {
      TuneConfig w = core::row_copy_cuda_default();
      w.set("rows_per_thread", rows);
      w.set("dense_walk", 1);
      v.push_back(w);
    }
    return v;
  }();
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
  core::TuneQuery q;
  q.op = kOp;
  q.impl = "cuda_sm80";
  q.backend = DeviceType::cuda;
  q.device_index = p.device_index;
  q.dtype = p.dtype;
  q.bucket = core::row_copy_bucket(p.D * es, p.total_L);
  q.candidates = &candidates();
  q.fallback = core::row_copy_cuda_default();
  TuneConfig tc;
  RECOPS_RETURN_IF_ERROR(core::resolve_config(q, ctx, &tc));
  const Launch cfg{static_cast<int>(tc.get("threads", 256)),
                   static_cast<int>(tc.get("rows_per_thread", 4)),
                   static_cast<int>(tc.get("units_per_lane", 2)), tc.get("dense_walk", 0) != 0};
  const int picked = core::cuda::pick_unit_bytes(
      es, {reads ? reinterpret_cast<uint64_t>(p.dense) : 0, reinterpret_cast<uint64_t>(p.out),
           static_cast<uint64_t>(p.D * es),
           reads ? static_cast<uint64_t>(p.dense_batch_stride * es) : 0,
           reads ? static_cast<uint64_t>(p.dense_row_stride * es) : 0,
           static_cast<uint64_t>(p.out_row_stride * es)});
  // A narrower unit than the alignment allows still divides every quantity (powers of two).
  const int unit = std::max(static_cast<int>(es),
                            std::min(picked, static_cast<int>(tc.get("max_unit_bytes", 16))));
  switch (unit) {
    case 16: return launch<16>(p, cfg, ctx);
    case 8: return launch<8>(p, cfg, ctx);
    case 4: return launch<4>(p, cfg, ctx);
    case 2: return launch<2>(p, cfg, ctx);
    case 1: return launch<1>(p, cfg, ctx);
  }
  return Status(StatusCode::internal,
                detail::cat(kOp, ": no unit width for elem_size ", es, " (expected 1, 2, 4 or 8)"));
}

}  // namespace recops::ops
