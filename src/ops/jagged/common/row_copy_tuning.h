// ops/jagged/common/row_copy_tuning.h: the tunable parameters of the row-copy conversions
// (jagged_to_padded_dense and dense_to_jagged), shared by their CUDA and CPU implementations; host
// code only.
//
// CUDA (cuda_sm80):
//   threads          threads per block (128, 256, 512)
//   rows_per_thread  rows whose loads a thread keeps in flight before storing (4 or 8; the kernels
//                    are instantiated for these two)
//   units_per_lane   lanes per row G: the smallest power of two with units_per_lane * G >= the
//                    row's units, at most 32 (1 or 2; row_copy_lanes_log2)
//   max_unit_bytes   the widest unit moved (16, 8): caps the width picked from the alignment
//   persistent       0: one block per tile (the default); 1: a persistent grid (resident blocks
//                    only) that walks the tiles grid-stride. H200, S3 (B=1024 max_L=1024 D=256
//                    skewed), bf16: 91% against 81% of the copy ceiling, fp32 92% against 85%
//                    (bench/experiments/jagged_variants.cu, in git history): with a fixed tile ->
//                    block assignment the blocks that draw more copy tiles (read + write) than pad
//                    tiles (write only) finish last, while the hardware scheduler hands tiles to
//                    blocks as SMs free up.
// CPU (cpu_generic):
//   grain_bytes      output bytes per parallel chunk at least (16 KiB ... 1 MiB)
//
// Shape bucket: row bytes and row count, each rounded up to a power of two (rows to an even one):
// "row_bytes=512,rows=2^20".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tuning.h"

namespace recops::core {

inline TuneConfig row_copy_cuda_default() {
  TuneConfig c;
  c.set("threads", 256);
  c.set("rows_per_thread", 4);
  c.set("units_per_lane", 2);
  c.set("max_unit_bytes", 16);
  c.set("persistent", 0);
  return c;
}

inline std::vector<TuneConfig> row_copy_cuda_candidates() {
  std::vector<TuneConfig> out = {row_copy_cuda_default()};
  for (const TuneConfig& c : config_grid({{"threads", {128, 256, 512}},
                                          {"rows_per_thread", {4, 8}},
                                          {"units_per_lane", {1, 2}},
                                          {"max_unit_bytes", {16}},
                                          {"persistent", {0}}}))
    if (!(c == out[0])) out.push_back(c);
  TuneConfig narrow = row_copy_cuda_default();
  narrow.set("max_unit_bytes", 8);
  out.push_back(narrow);
  TuneConfig persistent = row_copy_cuda_default();
  persistent.set("persistent", 1);
  out.push_back(persistent);
  return out;
}

// Blocks of a one-block-per-tile launch: every tile, up to the grid's x limit (the kernels walk
// the tiles grid-stride, so a capped grid still covers them all).
inline unsigned row_copy_tile_grid(int64_t num_tiles) {
  constexpr int64_t kMaxGridX = 2147483647;  // 2^31 - 1
  const int64_t g = num_tiles < kMaxGridX ? num_tiles : kMaxGridX;
  return static_cast<unsigned>(g > 0 ? g : 1);
}

// Lanes per row (log2) for `w` units per row and `units_per_lane`: the smallest power of two G
// with units_per_lane * G >= w, capped at 32 lanes.
inline int row_copy_lanes_log2(int64_t w, int64_t units_per_lane) {
  int g = 0;
  while (g < 5 && units_per_lane * (int64_t{1} << g) < w) ++g;
  return g;
}

inline std::string row_copy_bucket(int64_t row_bytes, int64_t rows) {
  int64_t w = 1;
  while (w < row_bytes && w < (int64_t{1} << 40)) w *= 2;
  return "row_bytes=" + std::to_string(w) + ",rows=" + pow2_bucket(rows, 2);
}

// The launch shape of a CUDA row copy, from its resolved configuration.
struct RowCopyCudaLaunch {
  int threads = 256;
  int rows_per_thread = 4;
  int units_per_lane = 2;
  int max_unit_bytes = 16;
  bool persistent = false;
};

inline RowCopyCudaLaunch row_copy_cuda_launch(const TuneConfig& c) {
  RowCopyCudaLaunch l;
  l.threads = static_cast<int>(c.get("threads", l.threads));
  l.rows_per_thread = static_cast<int>(c.get("rows_per_thread", l.rows_per_thread));
  l.units_per_lane = static_cast<int>(c.get("units_per_lane", l.units_per_lane));
  l.max_unit_bytes = static_cast<int>(c.get("max_unit_bytes", l.max_unit_bytes));
  l.persistent = c.get("persistent", 0) != 0;
  return l;
}

// The configuration of `op`'s cuda_sm80 row copy for `rows` rows of `row_bytes`: forced, tuned or
// the default (resolve_config).
inline Status resolve_row_copy_cuda(std::string_view op, const std::vector<TuneConfig>& candidates,
                                    int device_index, DType dtype, int64_t row_bytes, int64_t rows,
                                    const Context& ctx, TuneConfig* out) {
  TuneQuery q;
  q.op = op;
  q.impl = "cuda_sm80";
  q.backend = DeviceType::cuda;
  q.device_index = device_index;
  q.dtype = dtype;
  q.bucket = row_copy_bucket(row_bytes, rows);
  q.candidates = &candidates;
  q.fallback = row_copy_cuda_default();
  return resolve_config(q, ctx, out);
}

// The unit width moved: the widest the alignment allows (`aligned_bytes`), capped at the
// configuration's max_unit_bytes, never below the element (a narrower power of two still divides
// every quantity).
inline int row_copy_unit_bytes(int64_t elem_size, int aligned_bytes, const RowCopyCudaLaunch& l) {
  const int capped = aligned_bytes < l.max_unit_bytes ? aligned_bytes : l.max_unit_bytes;
  return capped > elem_size ? capped : static_cast<int>(elem_size);
}

inline TuneConfig row_copy_cpu_default() {
  TuneConfig c;
  c.set("grain_bytes", 65536);
  return c;
}

inline std::vector<TuneConfig> row_copy_cpu_candidates() {
  return config_grid({{"grain_bytes", {65536, 16384, 262144, 1048576}}});
}

}  // namespace recops::core
