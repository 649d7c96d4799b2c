// training/common/row_norm.h: what the row-norm ops (rms_norm, l2norm, ...) share between the
// entry, cpu/ and cuda/ (host code, no CUDA): the fixed split of the rows into chunks whose
// weight-gradient partials are summed in a fixed order (training_ops.md §1, determinism).
#pragma once

#include <algorithm>
#include <cstdint>

#include "recops/isa_ns.h"

// Host and device (the CUDA kit calls partial_begin in kernels).
#if defined(__CUDACC__)
#define RECOPS_TRAINING_HD __host__ __device__
#else
#define RECOPS_TRAINING_HD
#endif

namespace recops::ops::training {
// The ISA-named inline namespace (recops/isa_ns.h): cpu/*_avx2.cpp files include this header too.
inline namespace RECOPS_ISA_NS {

// Weight-gradient partials: P chunks of rows, each chunk's column sums in one fp32 (fp64 for
// fp64) row of a [P, D] workspace, then summed over P in order. P depends on the shape only
// (never on threads or the device), so every run adds in the same order. At most kMaxPartials
// chunks, at least kMinRowsPerPartial rows each, and a [P, D] workspace of at most kMaxPartialElems
// elements (32 MiB of fp32).
inline constexpr int64_t kMaxPartials = 2048;
inline constexpr int64_t kMinRowsPerPartial = 8;
inline constexpr int64_t kMaxPartialElems = int64_t{8} << 20;

inline int64_t norm_partials(int64_t rows, int64_t D) {
  if (rows <= 0 || D <= 0) return 0;
  int64_t p = std::min(kMaxPartials, (rows + kMinRowsPerPartial - 1) / kMinRowsPerPartial);
  p = std::min(p, std::max<int64_t>(1, kMaxPartialElems / D));
  return std::max<int64_t>(1, p);
}

// The rows of chunk i of P: [rows * i / P, rows * (i + 1) / P).
RECOPS_TRAINING_HD inline int64_t partial_begin(int64_t rows, int64_t P, int64_t i) {
  return rows / P * i + rows % P * i / P;
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::ops::training
