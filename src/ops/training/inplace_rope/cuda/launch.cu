// training/inplace_rope/cuda/launch.cu: the dtype switch, the vector width, grid and checked
// launches (architecture.md §2 step 5). The rope slice goes 16 bytes of x an access (P = 8 /
// sizeof(T) pairs, one cos and one sin access of P values) when every group is aligned for it:
// x's and dx's base, the slice start Dh − R and every stride of a dim with more than one entry a
// multiple of 16 bytes, P dividing R/2, and cos's and sin's base and strides multiples of P
// values. Otherwise one element an access (P = 1): any stride the entry accepts works. The
// backward runs as one row kernel when those conditions hold (the nope channels then go 16 bytes
// an access too); otherwise as a nope copy and the rope kernel.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "core/cuda/launch.h"
#include "ops/training/inplace_rope/cuda/kernel.cuh"
#include "ops/training/inplace_rope/cuda/tiles.h"
#include "ops/training/inplace_rope/impls.h"

namespace recops::ops::inplace_rope_ns {
namespace {
// `ptr` is aligned to `bytes`, and so is every stride (in elements of size `es`) of a dim with
// more than one entry.
bool aligned(const void* ptr, int64_t bytes, int64_t es, const Params& p, int64_t sb, int64_t sl,
             int64_t sh) {
  auto ok = [&](int64_t size, int64_t stride) { return size <= 1 || (stride * es) % bytes == 0; };
  return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(bytes) == 0 && ok(p.B, sb) &&
         ok(p.L, sl) && ok(p.H, sh);
}

dim3 grid_for(int64_t items) {
  return dim3(
      static_cast<unsigned>(std::min<int64_t>((items + kThreads - 1) / kThreads, kMaxBlocks)));
}

const char* op_name(const Params& p) {
  return p.copy_nope ? "inplace_rope_bwd" : "inplace_rope_";
}

template <class T, class C, int P, bool Vec>
Status launch_rope(const Params& p, void* stream) {
  const int64_t hchunks = (p.H + kHeadsPerThread - 1) / kHeadsPerThread;
  const int64_t items = p.B * p.L * hchunks * (p.half / P);
  if (items == 0) return Status::Ok();  // R = 0 (the backward's copy still runs)
  return RECOPS_LAUNCH_KERNEL(op_name(p), (rope_kernel<T, C, P, Vec>), grid_for(items),
                              dim3(kThreads), 0, stream, p);
}

// Whether every access can be 16 bytes of x (P = 8 / sizeof(T) pairs, one cos and one sin access
// of P values): x's and dx's base, the slice start Dh − R and every stride of a dim with more than
// one entry multiples of 16 bytes, P dividing R/2, cos's and sin's base and strides multiples of P
// values (not looked at when R = 0: nothing of them is read).
template <class T, class C>
bool vectorizable(const Params& p) {
  constexpr int kP = 8 / static_cast<int>(sizeof(T));
  constexpr int64_t kXBytes = 16;
  constexpr int64_t kCBytes = kP * static_cast<int64_t>(sizeof(C));
  const int64_t first = p.Dh - 2 * p.half;
  const int64_t es = sizeof(T), cs = sizeof(C);
  return p.half % kP == 0 && (first * es) % kXBytes == 0 &&
         aligned(p.src, kXBytes, es, p, p.src_sb, p.src_sl, p.src_sh) &&
         aligned(p.dst, kXBytes, es, p, p.dst_sb, p.dst_sl, p.dst_sh) &&
         (p.half == 0 || (aligned(p.cos, kCBytes, cs, p, p.cs_sb, p.cs_sl, 0) &&
                          aligned(p.sin, kCBytes, cs, p, p.sn_sb, p.sn_sl, 0)));
}

template <class T, class C>
Status rope_typed(const Params& p, void* stream) {
  constexpr int kP = 8 / static_cast<int>(sizeof(T));  // 2P elements of x = 16 bytes
  return vectorizable<T, C>(p) ? launch_rope<T, C, kP, true>(p, stream)
                               : launch_rope<T, C, 1, false>(p, stream);
}

template <class T>
Status nope_copy(const Params& p, void* stream) {
  const int64_t first = p.Dh - 2 * p.half;
  if (!p.copy_nope || first == 0) return Status::Ok();
  constexpr int kN = 16 / static_cast<int>(sizeof(T));
  const int64_t es = sizeof(T);
  const bool vec = first % kN == 0 && aligned(p.src, 16, es, p, p.src_sb, p.src_sl, p.src_sh) &&
                   aligned(p.dst, 16, es, p, p.dst_sb, p.dst_sl, p.dst_sh);
  const int64_t rows = p.B * p.L * p.H;
  if (vec)
    return RECOPS_LAUNCH_KERNEL(op_name(p), (nope_copy_kernel<T, kN>),
                                grid_for(rows * (first / kN)), dim3(kThreads), 0, stream, p);
  return RECOPS_LAUNCH_KERNEL(op_name(p), (nope_copy_kernel<T, 1>), grid_for(rows * first),
                              dim3(kThreads), 0, stream, p);
}

// The backward in one pass (bwd_rows_kernel) when vectorizable (N = 16 bytes of x then divides
// Dh − R too). Returns nothing (and launches nothing) otherwise.
template <class T, class C>
std::optional<Status> bwd_rows(const Params& p, void* stream) {
  if (!vectorizable<T, C>(p)) return std::nullopt;
  constexpr int kN = 16 / static_cast<int>(sizeof(T));
  const int64_t rows = p.B * p.L * p.H, row_v = p.Dh / kN;
  if (rows == 0 || row_v == 0) return Status::Ok();
  int log2g = 0;  // lanes a row: the vectors of a row rounded up to a power of 2, at most 32
  while (log2g < 5 && (int64_t{1} << log2g) < row_v) ++log2g;
  const int64_t rows_per_block = kThreads >> log2g;
  const dim3 grid(static_cast<unsigned>(
      std::min<int64_t>((rows + rows_per_block - 1) / rows_per_block, kMaxBlocks)));
  return RECOPS_LAUNCH_KERNEL(op_name(p), (bwd_rows_kernel<T, C, kN>), grid, dim3(kThreads), 0,
                              stream, p, log2g);
}

template <class T, class C>
Status run_with(const Params& p, void* stream) {
  if (p.copy_nope) {
    if (std::optional<Status> st = bwd_rows<T, C>(p, stream)) return *st;
    RECOPS_RETURN_IF_ERROR(nope_copy<T>(p, stream));
  }
  return rope_typed<T, C>(p, stream);
}

// x's dtype T; cos and sin fp32 or T (the entry checked).
template <class T>
Status run_typed(const Params& p, void* stream) {
  if (p.cs_dtype == DType::fp32) return run_with<T, float>(p, stream);
  if constexpr (std::is_same_v<T, float>)
    return Status(StatusCode::internal, "inplace_rope_: cuda_sm80 reached with a bad cos dtype");
  else
    return run_with<T, T>(p, stream);
}
}  // namespace

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp64: return run_typed<double>(p, ctx.stream);
    case DType::fp32: return run_typed<float>(p, ctx.stream);
    case DType::fp16: return run_typed<__half>(p, ctx.stream);
    case DType::bf16: return run_typed<__nv_bfloat16>(p, ctx.stream);
    default:
      return Status(StatusCode::internal, "inplace_rope_: cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::inplace_rope_ns
