// jagged/expand_1d_jagged_to_dense/params.h: the flat problem description shared by the entry,
// the reference, cpu/ and cuda/.
#pragma once

#include <cstdint>

namespace recops::ops::expand_1d_jagged_to_dense_ns {

// values [total_L] (element stride values_stride), out [B, max_len] dense; elements of elem_size
// bytes moved as they are.
struct Params {
  const void* values = nullptr;
  int64_t values_stride = 1;
  void* out = nullptr;
  int64_t elem_size = 4;
  const void* seq_offsets = nullptr;  // [B+1]
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  int64_t B = 0;
  int64_t max_len = 0;
  int64_t total_L = 0;
  int device_index = 0;
};

}  // namespace recops::ops::expand_1d_jagged_to_dense_ns
