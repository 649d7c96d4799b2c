// block_sparse_attention/cuda/launch.cu: the CUDA implementations' entries: what each accepts
// (cuda_sm80_fa: D ∈ {64, 128}, sparse_block_size a multiple of 128, 16-byte aligned rows;
// cuda_sm80: D ∈ {64, 128, 256}, any sparse_block_size), the flat kernel arguments, the
// (dtype, D) instantiation, and the tail kernel for q rows that belong to no batch.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tuning.h"
#include "ops/stem/block_sparse_attention/cuda/fa.cuh"
#include "ops/stem/block_sparse_attention/cuda/fa_sm90.cuh"
#include "ops/stem/block_sparse_attention/cuda/launch.h"
#include "ops/stem/block_sparse_attention/impls.h"

namespace recops::ops {
namespace bsa_cuda {

__global__ void bsa_tail_kernel(Args a, int64_t D) {
  const int64_t qend = clamp64(a.cu_q[a.B * a.cu_q_stride], 0, a.Tq);
  const int64_t rows = (a.Tq - qend) * a.Nq;
  for (int64_t x = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; x < rows * D;
       x += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = x / D, tok = qend + row / a.Nq, h = row % a.Nq;
    a.out[(tok * a.Nq + h) * D + x % D] = 0;
    if (x % D == 0) a.lse[h * a.Tq + tok] = -INFINITY;
  }
}

}  // namespace bsa_cuda

namespace {
bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}
// 16-byte row loads are aligned: base pointers and every token/head/page stride.
bool vec_ok(const BlockSparseAttentionParams& p) {
  bool ok = aligned16(p.q) && aligned16(p.k) && aligned16(p.v);
  for (int64_t s : {p.q_tok_stride, p.q_head_stride, p.k_tok_stride, p.k_head_stride,
                    p.k_page_stride, p.v_tok_stride, p.v_head_stride, p.v_page_stride})
    ok = ok && s % 8 == 0;
  return ok;
}
}  // namespace

std::string block_sparse_attention_cuda_reason(const BlockSparseAttentionParams& p) {
  if (p.D != 64 && p.D != 128 && p.D != 256)
    return "recops.block_sparse_attention: the CUDA kernel supports head dim D in {64, 128, 256}, "
           "got D=" +
           std::to_string(p.D);
  return {};
}

namespace {

// The kernel arguments of both kernels (sub_per_block and num_tiles set by the caller) and the
// tail kernel's launch (q rows past cu_seqlens_q[B]).
Status fill_args(const BlockSparseAttentionParams& p, const Context& ctx, bsa_cuda::Args* out) {
  bsa_cuda::Args& a = *out;
  a = bsa_cuda::Args{};
  stem_cuda::set_qkv_args(p, &a);
  a.indices = p.indices;
  a.seq_len = p.seq_len;
  a.out = static_cast<uint16_t*>(p.out);
  a.lse = p.lse;
  a.G = p.G;
  a.scale = static_cast<float>(p.scale);
  a.causal = p.causal;
  a.vec = vec_ok(p);
  if (p.Tq * p.Nq > 0) {
    auto* tail = &bsa_cuda::bsa_tail_kernel;
    unsigned grid = 1;
    RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(tail), 256, 0,
                                                       p.Tq * p.Nq * p.D, &grid));
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL("block_sparse_attention", tail, dim3(grid),
                                                dim3(256), 0, ctx.stream, a, p.D));
  }
  return Status::Ok();
}

// The steps every CUDA implementation takes: the device, its refusal, the kernel arguments with
// `sub_per_block` CTAs per (b, hq, query block), then launch(a) unless there are no tiles.
template <class Launch>
Status run_tiles(const BlockSparseAttentionParams& p, const Context& ctx,
                 std::string (*reason)(const BlockSparseAttentionParams&), int64_t sub_per_block,
                 Launch launch) {
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  const std::string why = reason(p);
  if (!why.empty()) return Status(StatusCode::not_implemented, why);
  bsa_cuda::Args a;
  RECOPS_RETURN_IF_ERROR(fill_args(p, ctx, &a));
  a.sub_per_block = sub_per_block;
  a.num_tiles = p.B * p.Nq * p.Qmax * a.sub_per_block;
  if (a.num_tiles == 0) return Status::Ok();
  return launch(a);
}

// cuda_sm80_fa's (dtype, D, rows per warp) instantiation for these tiles.
Status launch_fa_tuned(const BlockSparseAttentionParams& p, const bsa_cuda::Args& a,
                       const Context& ctx) {
  const bool bf = p.dtype == DType::bf16;
  if (p.D == 64)
    return bf ? bsa_cuda::launch_fa<__nv_bfloat16, 64, 1>(a, ctx)
              : bsa_cuda::launch_fa<__half, 64, 1>(a, ctx);
  // D = 128: 16 or 32 query rows per warp (tune parameter rows_per_warp; default 16).
  static const std::vector<TuneConfig> candidates = block_sparse_attention_cuda_fa_candidates();
  core::TuneQuery q;
  q.op = "block_sparse_attention";
  q.impl = "cuda_sm80_fa";
  q.backend = DeviceType::cuda;
  q.device_index = p.device_index;
  q.dtype = p.dtype;
  // The tile count's power-of-4 class: fewer, fuller CTAs (32) against more CTAs (16) depends on
  // how many waves the grid makes, so a configuration tuned on one size does not carry to another.
  q.bucket = "D=" + std::to_string(p.D) + ",tiles=" + core::pow2_bucket(a.num_tiles, 2);
  q.candidates = &candidates;
  q.fallback.set("rows_per_warp", 16);
  TuneConfig cfg;
  RECOPS_RETURN_IF_ERROR(core::resolve_config(q, ctx, &cfg));
  if (cfg.get("rows_per_warp", 16) == 32)
    return bf ? bsa_cuda::launch_fa<__nv_bfloat16, 128, 2>(a, ctx)
              : bsa_cuda::launch_fa<__half, 128, 2>(a, ctx);
  return bf ? bsa_cuda::launch_fa<__nv_bfloat16, 128, 1>(a, ctx)
            : bsa_cuda::launch_fa<__half, 128, 1>(a, ctx);
}

}  // namespace

std::string block_sparse_attention_cuda_fa_reason(const BlockSparseAttentionParams& p) {
  if (p.D != 64 && p.D != 128)
    return "recops.block_sparse_attention: cuda_sm80_fa supports head dim D in {64, 128}, got D=" +
           std::to_string(p.D);
  if (p.Bs % bsa_cuda::kFaQTile != 0)
    return "recops.block_sparse_attention: cuda_sm80_fa needs sparse_block_size a multiple of 128, "
           "got " +
           std::to_string(p.Bs);
  if (p.Bs > (int64_t{1} << 20) || p.Tq >= bsa_cuda::kFaTokenLimit ||
      p.Tk >= bsa_cuda::kFaTokenLimit || p.num_pages * p.page_size >= bsa_cuda::kFaTokenLimit)
    return "recops.block_sparse_attention: cuda_sm80_fa takes sparse_block_size <= 2^20 and fewer "
           "than 2^31 - 256 q rows and key tokens";
  if (!vec_ok(p))
    return "recops.block_sparse_attention: cuda_sm80_fa needs 16-byte aligned q/k/v rows (base "
           "pointers and token/head/page strides multiples of 8 elements)";
  return {};
}

std::string block_sparse_attention_cuda_sm90_reason(const BlockSparseAttentionParams& p) {
  const std::string pre = "recops.block_sparse_attention: cuda_sm90 ";
  if (p.D != 128) return pre + "needs head dim D = 128, got D=" + std::to_string(p.D);
  if (p.Bs != 128)
    return pre + "needs sparse_block_size 128, got " + std::to_string(p.Bs) +
           " (cuda_sm80_fa runs multiples of 128)";
  if (p.paged) return pre + "has no paged KV (cuda_sm80_fa runs it)";
  if (p.Tq >= bsa_cuda::sm90::kTokenLimit || p.Tk >= bsa_cuda::sm90::kTokenLimit)
    return pre + "takes fewer than 2^31 - 256 q rows and key tokens";
  if (!vec_ok(p))
    return pre +
           "needs 16-byte aligned q/k/v rows (base pointers and token/head strides "
           "multiples of 8 elements)";
  // TMA tensor maps nest their dimensions: a head holds its D elements, a token row its heads.
  if (p.q_head_stride < p.D || p.q_tok_stride < p.q_head_stride * p.Nq || p.k_head_stride < p.D ||
      p.k_tok_stride < p.k_head_stride * p.Nk || p.v_head_stride < p.D ||
      p.v_tok_stride < p.v_head_stride * p.Nk)
    return pre +
           "needs token-major q, k, v (a token row holds its heads, a head its D "
           "contiguous elements)";
  const std::string why =
      core::cuda::sm90a_reason(p.device_index, bsa_cuda::bsa_sm90_binary_version(p.device_index));
  return why.empty() ? why : pre + why;
}

Status block_sparse_attention_cuda_sm90(const BlockSparseAttentionParams& p, const Context& ctx) {
  return run_tiles(p, ctx, block_sparse_attention_cuda_sm90_reason, 1,
                   [&](const bsa_cuda::Args& a) {
                     return p.dtype == DType::bf16 ? bsa_cuda::launch_sm90<__nv_bfloat16>(a, ctx)
                                                   : bsa_cuda::launch_sm90<__half>(a, ctx);
                   });
}

// Tune parameter rows_per_warp (D = 128 only; D = 64 always runs 16): 16 = 8 warps x 16 query
// rows, 32 = 4 warps x 32 rows (each K/V fragment feeds two MMAs).
std::vector<TuneConfig> block_sparse_attention_cuda_fa_candidates() {
  return core::config_grid({{"rows_per_warp", {16, 32}}});
}

Status block_sparse_attention_cuda_fa(const BlockSparseAttentionParams& p, const Context& ctx) {
  return run_tiles(p, ctx, block_sparse_attention_cuda_fa_reason, p.Bs / bsa_cuda::kFaQTile,
                   [&](const bsa_cuda::Args& a) { return launch_fa_tuned(p, a, ctx); });
}

Status block_sparse_attention_cuda(const BlockSparseAttentionParams& p, const Context& ctx) {
  const int64_t sub = (p.Bs + bsa_cuda::kQTile - 1) / bsa_cuda::kQTile;
  return run_tiles(p, ctx, block_sparse_attention_cuda_reason, sub, [&](const bsa_cuda::Args& a) {
    const bool bf = p.dtype == DType::bf16;
    switch (p.D) {
      case 64:
        return bf ? bsa_cuda::launch_fwd<__nv_bfloat16, 64>(a, ctx)
                  : bsa_cuda::launch_fwd<__half, 64>(a, ctx);
      case 128:
        return bf ? bsa_cuda::launch_fwd<__nv_bfloat16, 128>(a, ctx)
                  : bsa_cuda::launch_fwd<__half, 128>(a, ctx);
      default:
        return bf ? bsa_cuda::launch_fwd<__nv_bfloat16, 256>(a, ctx)
                  : bsa_cuda::launch_fwd<__half, 256>(a, ctx);
    }
  });
}

}  // namespace recops::ops
