// common/cuda/to_dense_kernel.cuh: the conversion kernel, which moves units of bits.
//
// out[b, l, :] = values[o_b + l, :] for l < n_b = min(L_b, max_L), else the padding pattern.
//
// Work list: the B*max_L output rows, cut into tiles of kRowsPerThread * (threads / G)
// consecutive rows (a tile may span several sequences); one block per tile by default, and the
// kernel walks the tiles grid-stride, so a capped or persistent grid (a tune candidate) works too.
// Inside a tile, groups of G lanes (G a power of two <= 32) move one row each, G consecutive units
// at a time, and every thread keeps kRowsPerThread rows' loads in flight before storing. Threads
// per block, kRowsPerThread (4 or 8), G and the unit width are tunable
// (ops/jagged/common/row_copy_tuning.h); the defaults are 256, 4, two units per lane, 16 bytes.
// Offsets are clamped into [0, total_L] and n_b into [0, max_L], so corrupted offsets read only
// rows of values and write only rows of out.
#pragma once

#include <cstdint>

#include "core/cuda/bits.cuh"
#include "ops/jagged/common/cuda/row_copy_args.cuh"

namespace recops::ops::j2pd_cuda {

// H200, 2026-11-29 (bench/experiments/jagged_variants.cu in git history, S3 = B=1024 max_L=1024
// D=256 skewed): one block per tile 91.0% of the 1 GiB copy ceiling in bf16 and 92.3% in fp32,
// against 80.9% and 84.7% with the persistent grid used before (blocks that drew more copy tiles
// than pad tiles finished last). Loading a thread's units of all its rows before any store (units
// per lane fixed at compile time) gained under 0.5% at one block per tile and was not adopted.
inline constexpr int kMaxThreads = 512;  // the largest `threads` candidate

template <class U>
using Args = row_copy_dev::Args<U>;  // src: the jagged values, dst: the dense out

template <class U, int kRowsPerThread>
__global__ void __launch_bounds__(kMaxThreads) jagged_to_padded_dense_kernel(const Args<U> a) {
  const int lanes = 1 << a.lanes_log2;
  const int lane = threadIdx.x & (lanes - 1);
  const int group = threadIdx.x >> a.lanes_log2;
  const int groups = static_cast<int>(blockDim.x) >> a.lanes_log2;

  for (int64_t tile = blockIdx.x; tile < a.num_tiles; tile += gridDim.x) {
    const int64_t r0 = tile * a.tile_rows;  // first output row of the tile
    const int64_t b0 = r0 / a.S;
    const int64_t l0 = r0 - b0 * a.S;

    const U* src[kRowsPerThread];
    U* dst[kRowsPerThread];
    bool live[kRowsPerThread];  // the row exists (b < B)
    bool copy[kRowsPerThread];  // l < n_b: copy from values, else pad
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      int64_t l = l0 + static_cast<int64_t>(k * groups + group);
      int64_t b = b0;
      if (l >= a.S) {  // the tile crossed into later sequences
        const int64_t q = l / a.S;
        b += q;
        l -= q * a.S;
      }
      live[k] = b < a.B;
      copy[k] = false;
      src[k] = a.src;
      dst[k] = a.dst;
      if (live[k]) {
        const int64_t start = a.offsets(b);
        const int64_t end = a.offsets(b + 1);
        const int64_t n = end > start ? (end - start < a.S ? end - start : a.S) : 0;
        copy[k] = l < n;
        src[k] = a.src + (start + l) * a.jagged_row_stride;
        dst[k] = a.dst + b * a.dense_batch_stride + l * a.dense_row_stride;
      }
    }
    for (int64_t c = lane; c < a.W; c += lanes) {
      U v[kRowsPerThread];
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k)
        v[k] = copy[k] ? core::cuda::load_stream(src[k] + c) : a.pad;
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k)
        if (live[k]) core::cuda::store_stream(dst[k] + c, v[k]);
    }
  }
}

}  // namespace recops::ops::j2pd_cuda
