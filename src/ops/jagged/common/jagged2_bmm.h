// ops/jagged/common/jagged2_bmm.h: what array_jagged_bmm_jagged_out and
// jagged_jagged_bmm_jagged_out share (jagged_ops.md §3, §4 row 3). Both ops, forward and backward,
// are three per-sample products between a jagged² tensor (block b N_b x N_b row-major, row stride
// N_b) and jagged tensors [sum N_b, D], on the window n_b = min(N_b, max_L):
//   ay : z(b,m)[d] = sum_{k<n} A_b[m,k] · Y(b,k)[d]   (A jagged², z jagged; rows m >= n get 0)
//   ayt: z(b,m)[d] = sum_{k<n} A_b[k,m] · Y(b,k)[d]   (A's block transposed)
//   xyt: z_b[m,j]  = sum_{d<D} A(b,m)[d] · Y(b,j)[d]  (A, Y jagged, z jagged²; 0 outside m,j < n)
// The goldens live in the op folders (ay, ayt: array_jagged_bmm_jagged_out/reference.cpp; xyt:
// jagged_jagged_bmm_jagged_out/reference.cpp); the CPU path in common/jagged2_bmm_cpu.cpp, the
// CUDA path in common/cuda/jagged2_bmm_launch.cu.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/dispatch.h"
#include "ops/jagged/common/jagged2_blocks.h"
#include "recops/dtype.h"
#include "recops/tensor_view.h"

namespace recops::ops::j2bmm {

enum class Mode : int { ay, ayt, xyt };

struct Params {
  Mode mode = Mode::ay;
  const void* a = nullptr;  // ay/ayt: jagged² [total_sq], element stride a_stride;
                            // xyt: jagged [total_L, D], row stride a_stride, last stride 1
  int64_t a_stride = 1;
  const void* y = nullptr;  // jagged [total_L, D], row stride y_stride, last stride 1
  int64_t y_stride = 0;
  void* z = nullptr;  // contiguous: ay/ayt [total_L, D]; xyt [total_sq]
  DType dtype = DType::fp32;
  const void* sq_offsets = nullptr;  // [B+1] complete cumsum of N_b^2
  bool sq_int64 = false;
  int64_t sq_stride = 1;
  const void* offsets = nullptr;  // [B+1] complete cumsum of N_b
  bool off_int64 = false;
  int64_t off_stride = 1;
  // seq_lengths [B]: the goldens' N_b. The implementations take N_b from the offsets (the same
  // once the entry has checked them; clamped, never out of bounds, when it has not).
  const void* lengths = nullptr;
  bool len_int64 = false;
  int64_t len_stride = 1;
  int64_t B = 0, D = 0, max_L = 0;
  int64_t total_L = 0;   // rows of the jagged tensors
  int64_t total_sq = 0;  // elements of the jagged² tensor
  bool plain = false;    // goldens only: the double standard's plain same-precision baseline
  int device_index = 0;
};

// Sample b as the implementations see it: jagged rows [o, o + L) and the jagged² block at `sq` of
// side N, offsets clamped into range (jagged2_block); n = min(L, N, max_L) keeps every access in
// bounds even when offsets and lengths disagree (possible on CUDA with validation off only).
struct Sample {
  int64_t o = 0, L = 0, sq = 0, N = 0, n = 0;
};
RECOPS_J2_HD inline Sample sample_at(const Params& p, int64_t b) {
  const int64_t k = b * p.off_stride;
  int64_t lo = p.off_int64 ? static_cast<const int64_t*>(p.offsets)[k]
                           : static_cast<const int32_t*>(p.offsets)[k];
  int64_t hi = p.off_int64 ? static_cast<const int64_t*>(p.offsets)[k + p.off_stride]
                           : static_cast<const int32_t*>(p.offsets)[k + p.off_stride];
  lo = lo < 0 ? 0 : (lo > p.total_L ? p.total_L : lo);
  hi = hi < lo ? lo : (hi > p.total_L ? p.total_L : hi);
  const Jagged2Block blk = jagged2_block_at(p.sq_offsets, p.sq_int64, p.sq_stride, b, p.total_sq);
  Sample s;
  s.o = lo, s.L = hi - lo, s.sq = blk.begin, s.N = blk.side;
  s.n = s.L < s.N ? s.L : s.N;
  if (p.max_L < s.n) s.n = p.max_L;
  return s;
}

Status run_cpu(const Params& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
Status run_cuda(const Params& p, const Context& ctx);  // cuda_sm80
#endif
Status array_golden(const Params& p, const Context& ctx);  // ay, ayt
Status outer_golden(const Params& p, const Context& ctx);  // xyt

// cuda_sm80, cpu_generic, reference (the mode's golden).
const std::vector<core::Impl<Params>>& impls(Mode mode);

// Checks common to both ops (host, no data read): `jag` 2-D [total_L, D] floating with last stride
// 1, `y` like it, `sq` (when given) 1-D of its dtype, seq_lengths [B], both offsets [B+1]
// int32/int64, max_seq_len >= 0, one device. The names are the arguments' in messages.
Status check_args(const char* op, const TensorView* sq, const char* sq_name, const TensorView& jag,
                  const char* jag_name, const TensorView& y, const char* y_name,
                  const TensorView& seq_lengths, const TensorView& sq_offsets,
                  const char* sq_off_name, const TensorView& offsets, const char* off_name,
                  int64_t max_L);

// Offset contents (§1.2): `offsets` valid for total_L rows with offsets[b+1]-offsets[b] =
// seq_lengths[b]; `sq_offsets` valid for total_sq with block b of seq_lengths[b]^2 elements. Then
// runs the mode through the implementation list (nothing for an empty output); with p.plain, the
// mode's golden as the plain baseline (CPU tensors only).
Status run(const char* op, const Params& p, DeviceType backend, const TensorView& seq_lengths,
           const TensorView& sq_offsets, const char* sq_off_name, const TensorView& offsets,
           const char* off_name, const Context& ctx);

// Params of one product: a, y and z as views, the rest from the arguments.
Params make_params(Mode mode, const TensorView& a, const TensorView& y, const TensorView& z,
                   const TensorView& seq_lengths, const TensorView& sq_offsets,
                   const TensorView& offsets, int64_t max_L);

}  // namespace recops::ops::j2bmm
