// training/common/packed_offsets.h: the entry check of `seq_offsets` (fla's cu_seqlens) that the
// varlen training ops share (training_ops.md §1 "Varlen"): packed sequences along the time dim of
// a tensor whose batch dim is 1.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/offsets.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::training {

// True when an extent is 0. An empty tensor may pair a 0 extent with huge ones, so emptiness is
// tested this way and never by a product of extents (which can overflow).
inline bool any_zero(std::initializer_list<int64_t> extents) {
  for (int64_t e : extents)
    if (e == 0) return true;
  return false;
}

// The product of extents: 0 when one is 0 (the others may then be huge), else saturating at
// INT64_MAX (as TensorView::numel).
inline int64_t extent_product(std::initializer_list<int64_t> extents) {
  if (any_zero(extents)) return 0;
  int64_t n = 1;
  for (int64_t e : extents) n = TensorView::mul_sat(n, e);
  return n;
}

// ceil(T / bt) for any T >= 0 and bt >= 1, without forming T + bt - 1 (T may be huge).
inline int64_t chunk_count(int64_t T, int64_t bt) {
  return T / bt + (T % bt != 0);
}

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

// One chunk of the time axis: flattened rows [row0, row0 + rows) (row = b·T + t) and its running
// number among all chunks, in fla's chunk order (batch rows, or packed sequences, in order).
struct TimeChunk {
  int64_t row0;
  int64_t rows;   // 1..bt
  int64_t index;  // 0, 1, ...: without offsets b·ceil(T / bt) + c
};

// The chunks of bt positions of every sequence, each cut from its own start (a tail chunk may be
// shorter; a zero-length sequence owns none). Without offsets (nullptr) sequence n is batch row n
// of T positions; with offsets (int32/int64, n_seq + 1 values, already validated; B = 1) it is
// rows [offsets[n], offsets[n + 1]). The GDN sub-ops' CPU paths (chunk_scaled_dot_kkt, solve_tril,
// recompute_w_u_fwd, chunk_fwd_o) walk these.
inline std::vector<TimeChunk> time_chunks(int64_t T, int64_t bt, int64_t n_seq, const void* offsets,
                                          DType off_dtype) {
  std::vector<TimeChunk> out;
  auto at = [&](int64_t n) -> int64_t {
    return off_dtype == DType::int32 ? static_cast<const int32_t*>(offsets)[n]
                                     : static_cast<const int64_t*>(offsets)[n];
  };
  for (int64_t n = 0; n < n_seq; ++n) {
    const int64_t first = offsets ? at(n) : n * T, last = offsets ? at(n + 1) : (n + 1) * T;
    for (int64_t r = first; r < last; r += bt)
      out.push_back({r, std::min(bt, last - r), static_cast<int64_t>(out.size())});
  }
  return out;
}

}  // namespace recops::ops::training
