// training/common/cuda/gdn_chunk_slots.cuh: the sync-free chunk numbering of the GDN sub-ops'
// CUDA paths (chunk_scaled_dot_kkt, solve_tril; include from .cu files only). training_ops.md
// §4.2: with varlen input the chunk count is not known on the host without a device-to-host read,
// so the grid covers the bound NT <= ceil(T/BT) + N and programs past the real chunks exit early.
//
// Slots: without seq_offsets slot i is chunk i % ceil(T/BT) of batch row i / ceil(T/BT)
// (B·ceil(T/BT) slots, every one a chunk). With seq_offsets, sequence n owns the slots
// [first(n), first(n+1)), first(n) = floor(off[n] / BT) + n: floor(e/BT) − floor(a/BT) + 1 >=
// ceil((e − a)/BT) of them, so every chunk of the sequence has a slot and the extra ones are
// empty; floor(T/BT) + N slots in all. A block finds its sequence by binary search over first(),
// which is non-decreasing for valid offsets. Offsets are clamped to [0, T] before use, so even
// unvalidated offsets (validation off) never index outside the tensors.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::training_dev {

// The slots of a launch (host): B·ceil(T/BT), or floor(T/BT) + N with offsets. T, BT >= 1.
inline int64_t gdn_chunk_slots(int64_t B, int64_t T, int64_t bt, int64_t n_seq, bool packed) {
  return packed ? T / bt + n_seq : B * (T / bt + (T % bt != 0));
}

// offsets[n] (int32 or int64) clamped to [0, T].
__device__ __forceinline__ int64_t gdn_offset(const void* offsets, DType t, int64_t n, int64_t T) {
  const int64_t v = t == DType::int32 ? static_cast<const int32_t*>(offsets)[n]
                                      : static_cast<const int64_t*>(offsets)[n];
  return v < 0 ? 0 : (v > T ? T : v);
}

// Slot `slot`'s chunk: *row0 its first flattened row (b·T + t), *rows its length (<= 0: an empty
// slot). offsets: nullptr, or n_seq + 1 values of dtype off_dtype (n_seq >= 1). The same result
// in every thread that asks for the same slot.
__device__ __forceinline__ void gdn_slot_chunk(int64_t slot, int64_t T, int64_t bt, int64_t n_seq,
                                               const void* offsets, DType off_dtype, int64_t* row0,
                                               int64_t* rows) {
  if (!offsets) {
    const int64_t per_row = T / bt + (T % bt != 0);
    const int64_t b = slot / per_row, c = slot % per_row;
    *row0 = b * T + c * bt;
    *rows = T - c * bt < bt ? T - c * bt : bt;
    return;
  }
  int64_t lo = 0, hi = n_seq - 1;  // the last sequence n with first(n) <= slot (first(0) = 0)
  while (lo < hi) {
    const int64_t mid = hi - (hi - lo) / 2;
    if (gdn_offset(offsets, off_dtype, mid, T) / bt + mid <= slot)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t begin = gdn_offset(offsets, off_dtype, lo, T);
  const int64_t end = gdn_offset(offsets, off_dtype, lo + 1, T);
  const int64_t c = slot - (begin / bt + lo);
  *row0 = begin + c * bt;
  const int64_t left = end - *row0;
  *rows = c < 0 || left <= 0 ? 0 : (left < bt ? left : bt);
}

}  // namespace recops::ops::training_dev
