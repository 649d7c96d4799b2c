// jagged/multi_head_jagged_flash_attention/cuda/seq.cuh: a sequence's rows as the CUDA kernels of
// both implementations (kernel.cuh, mma_kernel.cuh) read them from seq_offsets.
#pragma once

#include <cstdint>

#include "ops/jagged/multi_head_jagged_flash_attention/params.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

// Sequence b: rows [o, o + len), of which the first n = min(len, max_L) take part.
struct Seq {
  int64_t o, len, n;
};

__device__ __forceinline__ int64_t offset_at(const Params& p, int64_t i) {
  const int64_t k = i * p.offsets_stride;
  return p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                         : static_cast<const int32_t*>(p.seq_offsets)[k];
}

// Sequence b clamped into [0, total_L] (corrupted offsets never read out of bounds).
__device__ __forceinline__ Seq seq_of(const Params& p, int64_t b) {
  const int64_t o = min(max(offset_at(p, b), int64_t{0}), p.total_L);
  const int64_t e = min(max(offset_at(p, b + 1), o), p.total_L);
  return {o, e - o, min(e - o, p.max_L)};
}

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
