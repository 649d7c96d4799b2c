// training/norm_mul_dropout/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/ (architecture.md habit 1), for norm_mul_dropout and its backward.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::norm_mul_dropout_ns {

// x, u, dx, du: [rows, D] contiguous, dtype; y, dy: [rows, W] with W = 3·D (concat_ux) or D.
// weight, bias, dweight, dbias: [nw], dtype, nw = heads (group_norm) or D.
// Normalisation groups: `heads` groups of L = D / heads columns a row (heads = 1 without
// group_norm); the weight of column d is weight[d / L] (group_norm) or weight[d].
struct Params {
  bool backward = false;
  bool group_norm = false;
  bool concat_ux = false;
  bool dropout = false;  // training and dropout_ratio > 0
  const void* x = nullptr;
  const void* u = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  const void* grad = nullptr;  // dy [rows, W]
  void* out = nullptr;         // forward: y [rows, W]; backward: dx
  void* du = nullptr;
  void* dweight = nullptr;
  void* dbias = nullptr;
  void* workspace = nullptr;  // [2, P, nw] fp64 column partials (P = training::norm_partials)
  DType dtype = DType::fp32;
  int64_t rows = 0;
  int64_t D = 0;
  int64_t heads = 1;
  double eps = 1e-5;
  float ratio = 0;  // dropout ratio p
  uint64_t seed = 0;
  uint64_t offset = 0;
  int device_index = 0;
};

}  // namespace recops::ops::norm_mul_dropout_ns
