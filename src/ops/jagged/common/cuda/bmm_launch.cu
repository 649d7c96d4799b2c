// ops/jagged/common/cuda/bmm_launch.cu: cuda_sm80 of jagged_dense_bmm and jagged_jagged_bmm:
// dtype switch, grid, checked launches (kernels: bmm_kernel.cuh; with jagged_jagged_bmm's split,
// bmm_split_chunks() in bmm_params.h, a second kernel adds the chunks' partials in order).
// Untuned: one 64 x 64 x 16 tile shape for every problem. Four dtypes x three small kernels, plus
// the tensor-core tile kernel for fp16 and bf16 (cuda_sm80_mma), in this one file. Also the host
// side of cuda_sm90 (accept test, operand layout, the same split reduction and zeroing after its
// kernel); its kernels are instantiated in bmm_sm90_bf16.cu and bmm_sm90_fp16.cu.
#include <algorithm>

#include "core/cuda/launch.h"
#include "ops/jagged/common/bmm.h"
#include "ops/jagged/common/cuda/bmm_mma_kernel.cuh"
#include "ops/jagged/common/cuda/bmm_sm90_kernel.cuh"

namespace recops::ops::bmm {
namespace {
constexpr int64_t kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs)

// After the tiles: jagged_jagged_bmm's split reduction and jagged_dense_bmm's truncated rows.
template <class T, class Acc>
Status post(const BmmParams& p, void* stream) {
  const dim3 block(kThreads);
  if (p.chunks > 1) {  // jagged_jagged_bmm's split: the chunks' partials added in order
    const dim3 grid(
        static_cast<unsigned>(std::min((p.B * p.M * p.N + kThreads - 1) / kThreads, kMaxBlocks)));
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(bmm_op_name(p), (bmm_split_reduce_kernel<T, Acc>),
                                                grid, block, 0, stream, p));
  }
  if (p.mode == BmmMode::jagged_dense && p.max_L < p.total_L) {  // some rows may be truncated
    const dim3 grid(static_cast<unsigned>(std::min(p.B, kMaxBlocks)));
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(bmm_op_name(p), bmm_zero_truncated_kernel<T>, grid,
                                                block, 0, stream, p));
  }
  return Status::Ok();
}

// kMma: the tiles on tensor cores (bmm_mma_kernel; fp16 and bf16), else bmm_tile_kernel.
template <class T, class Acc, bool kMma>
Status launch(const BmmParams& p, void* stream) {
  const int64_t col_tiles = (p.N + kBn - 1) / kBn;
  const int64_t tiles_per_seq = (bmm_tile_rows(p) + kBm - 1) / kBm * col_tiles;
  const dim3 block(kThreads);
  if (tiles_per_seq > 0) {
    const dim3 grid(static_cast<unsigned>(std::min(p.B * p.chunks * tiles_per_seq, kMaxBlocks)));
    if constexpr (kMma)
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(bmm_op_name(p), bmm_mma_kernel<T>, grid, block, 0,
                                                  stream, p, tiles_per_seq, col_tiles));
    else
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(bmm_op_name(p), (bmm_tile_kernel<T, Acc>), grid,
                                                  block, 0, stream, p, tiles_per_seq, col_tiles));
  }
  return post<T, Acc>(p, stream);
}

bool aligned16(const void* ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
}

// cuda_sm90's operand layout of p (kSm90* flags), or -1 when its 16-byte copies cannot stage the
// operands: each operand's unit-stride dimension must start 16-byte aligned in every row and
// sequence (base aligned, the other strides multiples of 8 elements).
int sm90_layout(const BmmParams& p) {
  if (!aligned16(p.x) || !aligned16(p.y) || p.x_row_stride % 8 != 0) return -1;
  if (p.mode == BmmMode::jagged_jagged) return p.y_sk % 8 == 0 ? kSm90AMnMajor : -1;
  if (p.y_sb % 8 != 0 && p.B > 1) return -1;
  if (p.y_sn == 1 && p.y_sk % 8 == 0) return 0;             // y[b] row-major: B MN-major
  if (p.y_sk == 1 && p.y_sn % 8 == 0) return kSm90BKMajor;  // y[b] column-major (y^T views)
  return -1;
}
}  // namespace

std::string sm90_accepts(const BmmParams& p) {
  if (p.dtype != DType::fp16 && p.dtype != DType::bf16)
    return "cuda_sm90 runs fp16 and bf16 (fp32 and fp64: cuda_sm80)";
  if (sm90_layout(p) < 0)
    return "cuda_sm90 needs 16-byte aligned x and y with row, k and batch strides that are "
           "multiples of 8 elements and unit stride along x's rows and along one dim of y "
           "(cuda_sm80_mma runs the rest)";
  const std::string why =
      core::cuda::sm90a_reason(p.device_index, sm90_binary_version(p.device_index));
  return why.empty() ? why : "cuda_sm90 " + why;
}

Status run_cuda_sm90(const BmmParams& p, const Context& ctx) {
  if (p.B == 0) return Status::Ok();
  const int layout = sm90_layout(p);
  if (layout < 0)
    return Status(StatusCode::internal, "jagged bmm: cuda_sm90 reached " + sm90_accepts(p));
  if (p.dtype == DType::bf16) {
    RECOPS_RETURN_IF_ERROR(launch_sm90_bf16(p, layout, ctx.stream));
    return post<__nv_bfloat16, float>(p, ctx.stream);
  }
  if (p.dtype == DType::fp16) {
    RECOPS_RETURN_IF_ERROR(launch_sm90_fp16(p, layout, ctx.stream));
    return post<__half, float>(p, ctx.stream);
  }
  return Status(StatusCode::internal, "jagged bmm: cuda_sm90 reached with a bad dtype");
}

Status run_cuda(const BmmParams& p, const Context& ctx) {
  if (p.B == 0) return Status::Ok();  // no sequences: nothing to write
  switch (p.dtype) {
    case DType::fp64: return launch<double, double, false>(p, ctx.stream);
    case DType::fp32: return launch<float, float, false>(p, ctx.stream);
    case DType::fp16: return launch<__half, float, false>(p, ctx.stream);
    case DType::bf16: return launch<__nv_bfloat16, float, false>(p, ctx.stream);
    default: return Status(StatusCode::internal, "jagged bmm: cuda_sm80 reached with a bad dtype");
  }
}

Status run_cuda_mma(const BmmParams& p, const Context& ctx) {
  if (p.B == 0) return Status::Ok();
  switch (p.dtype) {
    case DType::fp16: return launch<__half, float, true>(p, ctx.stream);
    case DType::bf16: return launch<__nv_bfloat16, float, true>(p, ctx.stream);
    default:
      return Status(StatusCode::internal, "jagged bmm: cuda_sm80_mma reached with a bad dtype");
  }
}

}  // namespace recops::ops::bmm
