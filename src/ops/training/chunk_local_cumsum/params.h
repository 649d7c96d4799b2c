// training/chunk_local_cumsum/params.h: the flat problem description shared by the entry, the
// reference and cpu/, for chunk_local_cumsum and its backward (which is the same sum in the other
// direction, so both directions fill one struct).
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_local_cumsum_ns {

// in, out: contiguous [B, T, C] with C = H (3-D g) or H·K (4-D g): each of the C columns of a
// position is summed on its own. Forward: in = g, out = out; backward: in = dout, out = dg, and
// `reverse` is already the backward's direction.
// Sequences: with seq_offsets (B = 1), sequence n is rows [off[n], off[n+1]); else sequence n is
// batch n, rows [0, T). Chunks of `chunk` rows start at each sequence's first row.
struct Params {
  const void* in = nullptr;
  void* out = nullptr;
  DType in_dtype = DType::fp32;
  DType out_dtype = DType::fp32;
  int64_t B = 0, T = 0, C = 0;
  int64_t N = 0;  // sequences
  int64_t chunk = 64;
  bool reverse = false;
  double scale = 1.0;
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  int device_index = 0;
};

}  // namespace recops::ops::chunk_local_cumsum_ns
