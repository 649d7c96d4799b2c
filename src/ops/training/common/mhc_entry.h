// training/common/mhc_entry.h: the entry checks the mHC ops (mhc_pre_bmm, mhc_post) share: the
// residual streams X [..., n, C], the coefficients' dtype, the token count; tensors beside X are
// checked with check_like (row_norm_entry.h).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "ops/training/common/row_norm_entry.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::training {

// X: [..., n, C], floating, contiguous.
inline Status check_streams(const char* op, const TensorView& X) {
  RECOPS_CHECK(is_float(X.dtype), op, ": X must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(X.dtype));
  RECOPS_CHECK(X.ndim >= 2, op, ": X must have at least two dims ([..., n, C]), got ", describe(X));
  RECOPS_CHECK(X.is_contiguous(), op, ": X must be contiguous; got ", describe(X));
  return Status::Ok();
}

// The mixing coefficients' dtype (h_pre, post, comb): fp32, or fp64 with fp64 streams.
inline DType mhc_coef_dtype(DType x) {
  return x == DType::fp64 ? DType::fp64 : DType::fp32;
}

// X's leading dims (all but n and C) followed by `tail`.
inline Shape mhc_lead_plus(const TensorView& X, std::initializer_list<int64_t> tail) {
  Shape s(X.sizes, X.sizes + X.ndim - 2);
  s.insert(s.end(), tail);
  return s;
}

// The number of tokens: the product of X's leading dims (1 for X [n, C]).
inline int64_t mhc_tokens(const TensorView& X) {
  int64_t t = 1;
  for (int d = 0; d < X.ndim - 2; ++d) t = TensorView::mul_sat(t, X.sizes[d]);
  return t;
}

}  // namespace recops::ops::training
