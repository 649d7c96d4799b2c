// training/inplace_rope/params.h: the flat problem description shared by the entry, the
// reference and cpu/ (architecture.md habit 1).
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::inplace_rope_ns {

struct Params {
  // src: the tensor read, [B, L, H, Dh] (packed [T, H, Dh] is B = 1, L = T), strides
  // src_sb/sl/sh and a unit last stride. dst: the tensor written, same sizes, strides
  // dst_sb/sl/sh. The forward has dst == src (in place, dst strides = src strides) and writes
  // only the rope slice; the backward writes a new dense dx, the nope slice copied from dy.
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t src_sb = 0, src_sl = 0, src_sh = 0;
  int64_t dst_sb = 0, dst_sl = 0, dst_sh = 0;
  DType dtype = DType::fp32;  // of src and dst
  int64_t B = 0, L = 0, H = 0, Dh = 0;
  int64_t half = 0;  // R / 2: the pairs of the rope slice, channels [Dh - 2·half, Dh)
  // cos, sin: [.., L, half] with a unit last stride; cs_sb = 0 when shared over the batch.
  const void* cos = nullptr;
  const void* sin = nullptr;
  int64_t cs_sb = 0, cs_sl = 0;  // cos's strides (sin has its own, below)
  int64_t sn_sb = 0, sn_sl = 0;
  DType cs_dtype = DType::fp32;  // of cos and sin: fp32 or x's dtype
  // +1: x' = (x0·c − x1·s, x1·c + x0·s); −1: the conjugate (x0·c + x1·s, x1·c − x0·s).
  int sign = 1;
  bool copy_nope = false;  // the backward: dst's channels [0, Dh - 2·half) = src's
  int device_index = 0;
};

}  // namespace recops::ops::inplace_rope_ns
