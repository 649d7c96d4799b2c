// training/common/packed_offsets.h: the entry check of `seq_offsets` (fla's cu_seqlens) that the
// varlen training ops share (training_ops.md §1 "Varlen"): packed sequences along the time dim of
// a tensor whose batch dim is 1.
#pragma once

#include <cstdint>

#include "core/offsets.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::training {

// o: 1-D int32/int64, contiguous, on x's device (x named `x_name`, with batch size B); B = 1;
// with ctx (not in shape functions, which read no data) also its values: start 0,
// non-decreasing, last = T (`t_rule` says where T comes from, e.g. "T (x's dim 2)"). *n_seq gets
// the sequence count len(o) - 1.
inline Status check_packed_offsets(const char* op, const char* x_name, const TensorView& x,
                                   const TensorView& o, int64_t B, int64_t T, const char* t_rule,
                                   const Context* ctx, int64_t* n_seq) {
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "seq_offsets", o));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, x_name, x, "seq_offsets", o));
  RECOPS_CHECK(B == 1, op, ": packed input (seq_offsets) requires B=1; got B=", B);
  RECOPS_CHECK(o.is_contiguous(), op, ": seq_offsets must be contiguous");
  if (ctx) RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, "seq_offsets", o, T, t_rule, *ctx));
  *n_seq = o.sizes[0] - 1;
  return Status::Ok();
}

}  // namespace recops::ops::training
