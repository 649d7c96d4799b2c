// ops/jagged/common/cuda/bmm_sm90_kernel.cuh: cuda_sm90 of the jagged matmuls, fp16 and bf16 on
// Hopper (sm_90a): the work list and split of bmm_tile_kernel (bmm_kernel.cuh) with 128 x Tn
// tiles of C (Tn = 256 when N > 128, else 128), the products on wgmma (m64n128k16, fp32
// accumulators, both operands from shared memory). 256 threads = two warpgroups, warpgroup w
// owning rows 64 w .. +64 of the tile. The inner extent goes in k-tiles of 64 through the
// shared-memory stages (5 at Tn = 128, 4 at 256) filled by cp.async (16-byte copies, zero fill
// past the edges; every thread loads): tile t + stages - 2 is in flight while tile t is
// multiplied, and one wgmma group stays pending across the barrier. Each operand is staged in its
// source layout, in the 128-byte swizzled atoms of core/cuda/sm90.cuh, and read by the wgmma
// descriptors as K-major or MN-major:
//   A K-major  (x rows, jagged_dense_bmm): 128 rows x 64 k, one atom column;
//   A MN-major (x_b^T, jagged_jagged_bmm): 64 k-rows x 128 columns, two atoms;
//   B MN-major (y[b] with unit column stride, or jagged_jagged_bmm's y): 64 k-rows x Tn columns;
//   B K-major  (y[b] with unit k stride: the backward's y^T): Tn n-rows x 64 k.
// The host (sm90_layout() in bmm_launch.cu) accepts only operands whose unit-stride dimension
// starts 16-byte aligned in every row (base aligned, other strides multiples of 8 elements). The
// accumulators go straight to global memory (bounds-checked; element pairs as one 32-bit store
// where aligned), or to the split's fp32 partials. Each output's products are summed in a fixed
// order: bit-identical across runs, no atomics. 64-bit index math.
#pragma once

#include "core/cuda/launch.h"
#include "core/cuda/mma.cuh"
#include "core/cuda/sm90.cuh"
#include "ops/jagged/common/cuda/bmm_kernel.cuh"

namespace recops::ops::bmm {

inline constexpr int kSm90Tm = 128;  // rows of C per CTA
inline constexpr int kSm90Bk = 64;   // k per stage (one swizzle atom of 16-bit elements)
inline constexpr int64_t kSm90MaxBlocks = 8192;       // grid-stride beyond this
inline constexpr uint32_t kSm90Atom = kSm90Bk * 128;  // a 64-row atom (8 KB)

// The shared-memory plan of the 128 x Tn tile: stages of A (128 x 64) then B (64 x Tn), plus
// 1024 bytes of slack for the atoms' 1024-byte alignment.
template <int Tn>
struct Sm90Plan {
  static_assert(Tn == 128 || Tn == 256);
  static constexpr int kStages = Tn == 128 ? 5 : 4;
  static constexpr uint32_t kABytes = kSm90Tm * kSm90Bk * 2, kBBytes = Tn * kSm90Bk * 2;
  static constexpr uint32_t kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemBytes = static_cast<int>(kStages * kStageBytes) + 1024;
};

// Operand layouts (bit flags of the kernel's kLayout).
inline constexpr int kSm90AMnMajor = 1;  // A(i, k) has unit stride along i
inline constexpr int kSm90BKMajor = 2;   // B(k, j) has unit stride along k

// R rows x C columns (C = 64, 128 or 256: C / 64 atoms, R * 128 bytes apart) of a row-major
// source (row r at src + r * row_stride elements) into a swizzled tile at `dst`; rows r >= nrows
// and columns c >= ncols are zero filled (`fallback`: any valid address, never read). Thread t
// copies chunk t % (C / 8) of rows t / (C / 8) + k * (256 / (C / 8)).
template <class T, int R, int C>
__device__ __forceinline__ void sm90_load_tile(uint32_t dst, const T* src, int64_t row_stride,
                                               int64_t nrows, int64_t ncols, const void* fallback) {
  constexpr int kCh = C / 8, kRp = kThreads / kCh;
  static_assert(kThreads == 256 && R % kRp == 0 && kRp % 8 == 0, "whole passes");
  const int r0 = static_cast<int>(threadIdx.x) / kCh, c = static_cast<int>(threadIdx.x) % kCh;
  const uint32_t d0 = dst + (c / 8) * (R * 128) + core::cuda::sm90::sw128(r0, (c % 8) * 8);
  const int64_t col = 8 * c;
  const int bytes = col >= ncols ? 0 : (ncols - col >= 8 ? 16 : static_cast<int>(ncols - col) * 2);
#pragma unroll
  for (int k = 0; k < R / kRp; ++k) {
    const int64_t r = r0 + kRp * k;
    const bool ok = bytes > 0 && r < nrows;
    core::cuda::cp_async16_n(d0 + k * kRp * 128,
                             ok ? static_cast<const void*>(src + r * row_stride + col) : fallback,
                             ok ? bytes : 0);
  }
}

// The k-tile [k0, k0 + 64) of item w's A and B into the stage at sa / sb.
template <class T, int Tn, int kLayout>
__device__ __forceinline__ void sm90_load_stage(const BmmParams& p, const BmmItem& w, int64_t k0,
                                                uint32_t sa, uint32_t sb) {
  const T* x = static_cast<const T*>(p.x);
  const T* y = static_cast<const T*>(p.y);
  const BmmGemm& g = w.g;
  const int64_t kn = w.k_hi - k0;  // valid k of this tile (may exceed 64)
  if constexpr ((kLayout & kSm90AMnMajor) != 0)
    sm90_load_tile<T, kSm90Bk, kSm90Tm>(sa, x + g.a + k0 * g.a_sk + w.i0, g.a_sk, kn, g.rows - w.i0,
                                        x);
  else
    sm90_load_tile<T, kSm90Tm, kSm90Bk>(sa, x + g.a + w.i0 * g.a_si + k0, g.a_si, g.rows - w.i0, kn,
                                        x);
  if constexpr ((kLayout & kSm90BKMajor) != 0)
    sm90_load_tile<T, Tn, kSm90Bk>(sb, y + g.b + w.j0 * g.b_sj + k0, g.b_sj, p.N - w.j0, kn, y);
  else
    sm90_load_tile<T, kSm90Bk, Tn>(sb, y + g.b + k0 * g.b_sk + w.j0, g.b_sk, kn, p.N - w.j0, y);
}

// acc[h] (this warpgroup's 64 rows x columns 128 h .. +128) += A (rows 64 wg.., 64 k) · B (64 k,
// Tn columns) of one stage: four k16 steps, Tn / 128 wgmmas each.
template <class T, int Tn, int kLayout>
__device__ __forceinline__ void sm90_stage_mma(float (&acc)[Tn / 128][64], uint32_t sa, uint32_t sb,
                                               int wg) {
  namespace w9 = core::cuda::sm90;
  constexpr bool kAMn = (kLayout & kSm90AMnMajor) != 0, kBK = (kLayout & kSm90BKMajor) != 0;
#pragma unroll
  for (int t = 0; t < kSm90Bk / 16; ++t) {
    const uint64_t da = kAMn ? w9::make_desc(sa + wg * kSm90Atom + t * 2048, kSm90Atom, 1024)
                             : w9::make_desc(sa + wg * kSm90Atom + t * 32, 16, 1024);
#pragma unroll
    for (int h = 0; h < Tn / 128; ++h) {
      // B's columns 128 h ..: K-major rows 128 h .. (128 bytes each), or MN-major atoms 2 h, 2 h
      // + 1.
      const uint64_t db = kBK ? w9::make_desc(sb + h * 128 * 128 + t * 32, 16, 1024)
                              : w9::make_desc(sb + 2 * h * kSm90Atom + t * 2048, kSm90Atom, 1024);
      w9::wgmma_ss<T, kBK ? 0 : 1, kAMn ? 1 : 0>(acc[h], da, db, 1);
    }
  }
}

// items = B * chunks * tiles_per_seq as in bmm_tile_kernel, with 128 x Tn tiles; kLayout: the
// kSm90* flags (a template argument: with a runtime switch around the wgmma ptxas injected
// warpgroup.arrive fences). Dynamic shared memory: Sm90Plan<Tn>::kSmemBytes.
template <class T, int Tn, int kLayout>
__global__ void __launch_bounds__(kThreads, 1)
    bmm_sm90_kernel(BmmParams p, int64_t tiles_per_seq, int64_t col_tiles) {
#if RECOPS_SM90A
  namespace w9 = core::cuda::sm90;
  using Plan = Sm90Plan<Tn>;
  constexpr int S = Plan::kStages;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t base = (core::cuda::smem_u32(smem_raw) + 1023u) & ~1023u;
  const auto stage = [&](int64_t s) { return base + static_cast<uint32_t>(s) * Plan::kStageBytes; };
  const int wg = static_cast<int>(threadIdx.x) / 128,
            warp = (static_cast<int>(threadIdx.x) / 32) % 4;
  const int lane = static_cast<int>(threadIdx.x) % 32, gr = lane / 4, qd = lane % 4;
  T* z = static_cast<T*>(p.z);
  const bool pairs = p.N % 2 == 0 && reinterpret_cast<uintptr_t>(z) % 4 == 0;
  for (int64_t item = blockIdx.x; item < p.B * p.chunks * tiles_per_seq; item += gridDim.x) {
    BmmItem w;
    if (!bmm_item<kSm90Tm, Tn>(p, item, tiles_per_seq, col_tiles, &w)) continue;
    const int64_t nk = (w.k_hi - w.k_lo + kSm90Bk - 1) / kSm90Bk;
    float acc[Tn / 128][64];
#pragma unroll
    for (int h = 0; h < Tn / 128; ++h) {
#pragma unroll
      for (int e = 0; e < 64; ++e) acc[h][e] = 0.f;
    }
    // Prologue: k-tiles 0 .. S - 3 (one commit group each, empty past nk).
#pragma unroll
    for (int s = 0; s < S - 2; ++s) {
      if (s < nk)
        sm90_load_stage<T, Tn, kLayout>(p, w, w.k_lo + s * kSm90Bk, stage(s),
                                        stage(s) + Plan::kABytes);
      core::cuda::cp_async_commit();
    }
    for (int64_t t = 0; t < nk; ++t) {
      // Tile t has landed (S - 3 later groups may still be in flight); the barrier also orders
      // every warpgroup's completed wgmma of tile t - 2 before that stage's refill below.
      core::cuda::cp_async_wait<S - 3>();
      w9::fence_proxy_async();
      __syncthreads();
      const int64_t tn = t + S - 2;
      if (tn < nk) {
        const uint32_t s = stage(tn % S);
        sm90_load_stage<T, Tn, kLayout>(p, w, w.k_lo + tn * kSm90Bk, s, s + Plan::kABytes);
      }
      core::cuda::cp_async_commit();
      const uint32_t sa = stage(t % S);
      w9::wg_fence();
      sm90_stage_mma<T, Tn, kLayout>(acc, sa, sa + Plan::kABytes, wg);
      w9::wg_commit();
      w9::wg_wait<1>();  // tile t - 1's products are done: its stage may be refilled
    }
    w9::wg_wait<0>();
    core::cuda::cp_async_wait<0>();
    // Epilogue: this thread's rows i (and i + 8), columns 128 h + 8 j + 2 qd (+1).
    const BmmGemm& g = w.g;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int64_t i = w.i0 + wg * 64 + warp * 16 + gr + 8 * u;
      if (i >= g.rows) continue;
#pragma unroll
      for (int h = 0; h < Tn / 128; ++h)
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          const int64_t col = w.j0 + 128 * h + 8 * j + 2 * qd;
          const float v0 = acc[h][4 * j + 2 * u], v1 = acc[h][4 * j + 2 * u + 1];
          if (col >= p.N) continue;
          if (p.chunks > 1) {
            float* ws = static_cast<float*>(p.workspace) + ((w.b * p.chunks + w.c) * p.M + i) * p.N;
            ws[col] = v0;
            if (col + 1 < p.N) ws[col + 1] = v1;
          } else {
            T* zr = z + g.c + i * g.c_si;
            if (pairs) {
              *reinterpret_cast<uint32_t*>(zr + col) = core::cuda::pack2<T>(v0, v1);
            } else {
              zr[col] = jagged_dev::from_acc<T>(v0);
              if (col + 1 < p.N) zr[col + 1] = jagged_dev::from_acc<T>(v1);
            }
          }
        }
    }
    __syncthreads();  // every warpgroup is done with the stages before the next item's prologue
  }
#endif
}

// The cuda_sm90 kernel of dtype T over p with 128 x Tn tiles.
template <class T, int Tn>
Status launch_sm90_tiles(const BmmParams& p, int layout, void* stream) {
  const int64_t col_tiles = (p.N + Tn - 1) / Tn;
  const int64_t tiles_per_seq = (bmm_tile_rows(p) + kSm90Tm - 1) / kSm90Tm * col_tiles;
  if (tiles_per_seq == 0) return Status::Ok();
  const int64_t items = p.B * p.chunks * tiles_per_seq;
  const dim3 grid(static_cast<unsigned>(items < kSm90MaxBlocks ? items : kSm90MaxBlocks));
  const char* op = bmm_op_name(p);
  const dim3 block(kThreads);
  constexpr int kSmem = Sm90Plan<Tn>::kSmemBytes;
  switch (layout) {
    case 0:
      return RECOPS_LAUNCH_KERNEL(op, (bmm_sm90_kernel<T, Tn, 0>), grid, block, kSmem, stream, p,
                                  tiles_per_seq, col_tiles);
    case kSm90BKMajor:
      return RECOPS_LAUNCH_KERNEL(op, (bmm_sm90_kernel<T, Tn, kSm90BKMajor>), grid, block, kSmem,
                                  stream, p, tiles_per_seq, col_tiles);
    case kSm90AMnMajor:
      return RECOPS_LAUNCH_KERNEL(op, (bmm_sm90_kernel<T, Tn, kSm90AMnMajor>), grid, block, kSmem,
                                  stream, p, tiles_per_seq, col_tiles);
    default: return Status(StatusCode::internal, "jagged bmm: cuda_sm90 has no such layout");
  }
}

// The cuda_sm90 kernel of dtype T over p (after sm90_layout() in bmm_launch.cu gave `layout`):
// 128 x 256 tiles when N > 128 (half the operand traffic per product of 128 x 128 tiles), else
// 128 x 128. The split's reduction and the zeroing of truncated rows follow in bmm_launch.cu.
template <class T>
Status launch_sm90(const BmmParams& p, int layout, void* stream) {
  return p.N > 128 ? launch_sm90_tiles<T, 256>(p, layout, stream)
                   : launch_sm90_tiles<T, 128>(p, layout, stream);
}

}  // namespace recops::ops::bmm
