// ops/jagged/common/permute_params.h: the flat problem of the permute ops (permute_api.h), shared
// by their entry (permute_entry.cpp), goldens, the CPU path (permute_cpu.cpp) and the CUDA path
// (cuda/permute_launch.cu). The 1-D op is the 2-D one with B = 1.
//
// Input row t (t < T) is the B segments lengths[t, 0..B), lying back to back: its elements are
// rows [in_off[t], in_off[t+1]) of values, in_off the complete cumsum of the row sums. Output row
// i (i < P) is input row permute[i]: permuted_lengths[i, b] = lengths[permute[i], b] and its
// elements are rows [out_off[i], out_off[i+1]) of the outputs, out_off the complete cumsum of the
// permuted row sums. So one output row is one contiguous copy, for the values and the weights.
#pragma once

#include <cstddef>
#include <cstdint>

#include "recops/context.h"
#include "recops/dtype.h"
#include "recops/status.h"

namespace recops::ops {

// One tensor that follows the lengths: src [N, D] (row stride src_row_stride, last stride 1),
// dst [R, D] dense. Copied as bytes (elem_size each).
struct PermutePayload {
  const void* src = nullptr;
  int64_t src_row_stride = 0;
  void* dst = nullptr;
  int64_t D = 1;
  int64_t elem_size = 1;
};

struct PermuteParams {
  const char* op = "";            // the op's name, for the errors of the CPU paths
  const void* lengths = nullptr;  // [T, B], element (t, b) at t * lengths_stride_t + b * stride_b
  bool lengths_int64 = false;
  int64_t lengths_stride_t = 1;
  int64_t lengths_stride_b = 1;
  const void* permute = nullptr;  // [P], element stride permute_stride
  bool permute_int64 = false;
  int64_t permute_stride = 1;
  void* out_lengths = nullptr;  // [P, B] dense, lengths' dtype
  int64_t T = 0, B = 1, P = 0;
  int64_t N = 0;  // values rows: the sum of lengths (validated where the data is read)
  int64_t R = 0;  // output rows: permuted_lengths_sum (on the CPU, checked by the paths: below)
  PermutePayload payload[2];
  int num_payloads = 1;  // 2 with weights
  int device_index = 0;
  void* workspace = nullptr;  // CUDA: offsets and scan storage (cuda/permute_launch.cu)
  size_t workspace_bytes = 0;
};

// On the CPU the entry checks lengths and permute but leaves the permuted lengths' sum to the
// paths, which find it on the way (the gather it takes is most of the op's cost with millions of
// tiny segments): each returns this error, before writing any values row, when the sum is not R
// (overflowed: want < 0). The same message as the entry's where it reads the contents itself.
Status permute_rows_error(const char* op, int64_t want, int64_t rows);

// The shared fast paths; each op lists them before its own golden.
Status permute_run_cpu(const PermuteParams& p, const Context& ctx);
Status permute_run_cuda(const PermuteParams& p, const Context& ctx);  // CUDA builds only
size_t permute_cuda_workspace_bytes(const PermuteParams& p);          // CUDA builds only

}  // namespace recops::ops
