// jagged/jagged_dense_flash_attention/cuda/seq.cuh: a sample's rows as the CUDA kernels of both
// implementations (kernel.cuh, mma_kernel.cuh) read them from seq_offsets.
#pragma once

#include <cstdint>

#include "ops/jagged/jagged_dense_flash_attention/params.h"

namespace recops::ops::jagged_dense_flash_attention_ns {

// seq_offsets[i], clamped into [0, total_L] (corrupted offsets never read out of bounds).
__device__ __forceinline__ int64_t offset_at(const Params& p, int64_t i) {
  const int64_t k = i * p.offsets_stride;
  const int64_t v = p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                                    : static_cast<const int32_t*>(p.seq_offsets)[k];
  return v < 0 ? 0 : (v > p.total_L ? p.total_L : v);
}
// Sample b: rows [start, start + rows), of which the first n = min(rows, max_L) take part.
struct Seq {
  int64_t start, rows, n;
};
__device__ __forceinline__ Seq seq_of(const Params& p, int64_t b) {
  const int64_t a = offset_at(p, b);
  const int64_t e = max(a, offset_at(p, b + 1));
  return {a, e - a, min(e - a, p.max_L)};
}

}  // namespace recops::ops::jagged_dense_flash_attention_ns
