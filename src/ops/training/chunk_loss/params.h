// training/chunk_loss/params.h: the flat problem description shared by the entry, the reference,
// cpu/ and cuda/. One struct for the forward and the backward.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_loss_ns {

enum class Red : uint8_t { none = 0, sum = 1, mean = 2 };

// A (the statistics' type): fp32, fp64 for fp64 inputs.
// chunk_loss_fwd (reduction "sum"/"mean") sets bwd and fused: the forward's loss and z_loss and the
// backward's dh, dw, db for a unit upstream gradient (grad is nullptr), from one call.
struct Params {
  bool bwd = false;
  bool fused = false;
  bool plain = false;                  // reference only: the double standard's plain baseline
  const void* hidden = nullptr;        // [N, D] contiguous, dtype
  const void* weight = nullptr;        // [V, D] contiguous, dtype
  const void* bias = nullptr;          // [V], dtype; nullptr: 0
  const void* labels = nullptr;        // [N], int64 when labels_int64 else int32
  const void* token_weight = nullptr;  // [N], tw_dtype; nullptr: 1
  // Forward: loss, z_loss ([N] for "none", else [1]) in A. Backward: grad ([N] or [1], A; nullptr:
  // 1) read; dh [N, D], dw [V, D], db [V] (nullptr: not wanted) written in dtype. Fused: all.
  void* loss = nullptr;
  void* z_loss = nullptr;
  const void* grad = nullptr;
  void* dh = nullptr;
  void* dw = nullptr;
  void* db = nullptr;
  void* workspace = nullptr;  // the entry's layout (chunk_loss.cpp, Layout)
  DType dtype = DType::fp32;
  DType tw_dtype = DType::fp32;
  bool labels_int64 = true;
  bool accum_low = false;  // dW/db accumulate in dtype (accum_dtype = input), else in A
  bool host = true;        // the tensors are on the CPU (the workspace layout differs)
  Red reduction = Red::mean;
  int64_t N = 0, D = 0, V = 0;
  int64_t Nc = 0, Vc = 0;  // token chunk rows, vocab tile columns (chunk_loss_plan)
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  double z_loss_scale = 0.0;
  double softcap = 0.0;
  int device_index = 0;
};

// The workspace's pieces, byte offsets from Params::workspace (s = dtype size, a = sizeof(A)):
//   rows   [4, N] A     per row: the running sum of the capped logits (then w·l), the label's
//                       logit (then w·lambda·lse²), w (backward: s_i), the running lse
//   z      [Nc, Vc] A   the logit tile; the CPU's backward turns it into G in place (fp32)
//   g      [Nc, Vc] s   G rounded to dtype (the CUDA GEMM operand; none on the CPU); in CUDA's
//                       compact layout none: each G row is written at the start of its Z row
//                       (row stride Vc·a/s elements of dtype, g_ld)
//   hacc   [Nc, D] A    the hidden chunk converted to A (CPU only)
//   dhacc  [Nc, D] A    the dh accumulator over vocab tiles (backward; in CUDA's compact layout
//                       only with vocab tiles, Vc < V: one tile's dh GEMM writes d_hidden's rows)
//   dbacc  [V] A        db accumulator (backward)
//   dwacc  [V, D] A     dW accumulator (backward; not needed where dW accumulates in d_weight
//                       itself: on the CPU when the input dtype is A, on CUDA with accum_low)
// On CUDA, when dW accumulates in dwacc, d_weight (V·D·s bytes) is written once, by the final cast
// of dwacc: until then it is free, and the pieces before dwacc (rows .. dbacc) live in it when they
// fit (in_dw; offsets from Params::dw), so that the workspace is dwacc alone. The device code then
// writes the loss (reads rows) and casts db (reads dbacc) before it casts dW.
struct Layout {
  size_t rows = 0, z = 0, g = 0, hacc = 0, dhacc = 0, dbacc = 0, dwacc = 0, total = 0;
  size_t pieces = 0;   // the bytes of rows .. dbacc
  bool in_dw = false;  // rows .. dbacc are offsets from Params::dw, dwacc alone from the workspace
  bool compact = false;  // CUDA: G over Z (row stride g_ld), dh straight into d_hidden (one tile)
};

inline size_t align256(size_t b) {
  return (b + 255) / 256 * 256;
}

// Whether dW accumulates in the workspace's dwacc rather than in d_weight itself: on the CPU for
// fp16/bf16 inputs (dW is fp32 then, rounded once at the end or per chunk with accum_low); on CUDA
// unless accum_low (cuBLAS accumulates into d_weight in its dtype).
inline bool dw_accumulator(const Params& p) {
  return p.host ? dtype_size(p.dtype) < 4 : !p.accum_low;
}

// The row stride of the CUDA G tile, in elements of dtype: Vc with its own buffer; in the compact
// layout G's row i starts where Z's row i does, Vc·a/s.
inline int64_t g_ld(const Params& p, bool compact, int64_t vc) {
  return compact ? vc * (p.dtype == DType::fp64 ? 8 : 4) / static_cast<int64_t>(dtype_size(p.dtype))
                 : vc;
}

// The CUDA backward takes the roomy layout (a G tile of its own, the fp32 dh accumulator) where
// its pieces fit in d_weight (there they cost nothing, and it measured about 3% faster than the
// compact one at N 16384, D 4096, V 131072 on an H100), else the compact one.
inline Layout layout_of(const Params& p) {
  const size_t a = p.dtype == DType::fp64 ? 8 : 4, s = dtype_size(p.dtype);
  const auto n = [](int64_t x) { return static_cast<size_t>(x); };
  const bool acc = p.bwd && dw_accumulator(p);
  auto build = [&](bool compact) {
    Layout l;
    l.compact = compact;
    size_t off = 0;
    auto take = [&](size_t bytes) {
      const size_t at = off;
      off += align256(bytes);
      return at;
    };
    l.rows = take(4 * n(p.N) * a);
    l.z = take(n(p.Nc) * n(p.Vc) * a);
    l.g = compact ? l.z : take(p.bwd && !p.host ? n(p.Nc) * n(p.Vc) * s : 0);
    l.hacc = take(p.host ? n(p.Nc) * n(p.D) * a : 0);
    l.dhacc = take(p.bwd && (!compact || p.Vc < p.V) ? n(p.Nc) * n(p.D) * a : 0);
    l.dbacc = take(p.bwd ? n(p.V) * a : 0);
    l.pieces = off;
    l.in_dw = acc && !p.host && l.pieces <= n(p.V) * n(p.D) * s;
    if (l.in_dw) off = 0;
    l.dwacc = take(acc ? n(p.V) * n(p.D) * a : 0);
    l.total = off;
    return l;
  };
  const Layout roomy = build(false);
  return p.host || !p.bwd || roomy.in_dw ? roomy : build(true);
}

}  // namespace recops::ops::chunk_loss_ns
