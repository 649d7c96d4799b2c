// training/solve_tril/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, head h); a block takes items grid-stride. Per item, as the CPU path
// (cpu/solve_tril_cpu.cpp) orders it, in the compute type C (fp32; fp64 for fp64 A):
//   0. the chunk's strictly lower A is staged in shared memory (rows past a tail chunk's L rows,
//      the diagonal and the upper part are zeros and are not read);
//   1. each 16 x 16 diagonal block is inverted by forward substitution: one thread per column of
//      the block walks the block's rows in order, X_rc = [r = c] − Σ_{c<=k<r} a_rk·X_kc (k
//      ascending; the CPU's terms with k < c multiply an exact zero and are skipped), so a column
//      depends only on its own thread and needs no barrier;
//   2. block row i = 1, 2, 3, for all j < i at once: S_j = Σ_{k from block j to block i−1}
//      A_ik·X_kj (elementwise, k ascending), a barrier, then X_ij = −X_ii·S_j, a barrier.
// Every sum is one serial chain (FMA), one thread per output element, no atomics. A and X are kept
// as packed lower triangles (row i at i(i+1)/2), so fp64 fits the 48 KB of static shared memory.
// Ai's rows of the chunk (only the L real ones) are written coalesced along j: X below and on the
// diagonal, zero above; each value rounded once from C to out's dtype.
//
// Chunk slots: training/common/cuda/gdn_chunks.cuh (sync-free varlen numbering, §4.2's
// NT bound; a slot past its sequence's chunks is empty and skipped by the whole block).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "ops/training/common/cuda/gdn_chunks.cuh"
#include "ops/training/solve_tril/cuda/tiles.h"
#include "ops/training/solve_tril/params.h"

namespace recops::ops::solve_tril_ns {

// Position of (i, j), j <= i, in a packed lower triangle.
__device__ __forceinline__ int tri(int i, int j) {
  return i * (i + 1) / 2 + j;
}

// A's element i as C (exact, except fp64 input, which only meets C = double).
template <class C>
__device__ __forceinline__ C load_a(const Params& p, int64_t i) {
  switch (p.in_dtype) {
    case DType::fp64: return static_cast<C>(static_cast<const double*>(p.a)[i]);
    case DType::fp32: return static_cast<C>(static_cast<const float*>(p.a)[i]);
    case DType::fp16: return static_cast<C>(__half2float(static_cast<const __half*>(p.a)[i]));
    default: return static_cast<C>(__bfloat162float(static_cast<const __nv_bfloat16*>(p.a)[i]));
  }
}

// Ai's element i = v rounded once to out's dtype (round to nearest even).
__device__ __forceinline__ void store_ai(const Params& p, int64_t i, float v) {
  switch (p.out_dtype) {
    case DType::fp64: static_cast<double*>(p.out)[i] = static_cast<double>(v); break;
    case DType::fp32: static_cast<float*>(p.out)[i] = v; break;
    case DType::fp16: static_cast<__half*>(p.out)[i] = __float2half_rn(v); break;
    default: static_cast<__nv_bfloat16*>(p.out)[i] = __float2bfloat16_rn(v); break;
  }
}
__device__ __forceinline__ void store_ai(const Params& p, int64_t i, double v) {
  switch (p.out_dtype) {
    case DType::fp64: static_cast<double*>(p.out)[i] = v; break;
    case DType::fp32: static_cast<float*>(p.out)[i] = __double2float_rn(v); break;
    case DType::fp16: static_cast<__half*>(p.out)[i] = __double2half(v); break;
    default: static_cast<__nv_bfloat16*>(p.out)[i] = __double2bfloat16(v); break;
  }
}

// items = slots · H; blockDim.x = kThreads (a multiple of 16, at least kMaxBT).
template <class C>
__global__ void __launch_bounds__(kThreads) solve_tril_kernel(const Params p, int64_t items) {
  constexpr int kSq = kBlk * kBlk;
  __shared__ C a[kTri];                           // strictly lower A (diagonal slots 0)
  __shared__ C x[kTri];                           // the inverse, lower triangle
  __shared__ C s[kMaxBT / kBlk - 1][kBlk][kBlk];  // S_j of the current block row
  const int64_t H = p.H, rs = H * p.BT;           // rs: the stride between rows t and t + 1
  const int bt = static_cast<int>(p.BT), nb = bt / kBlk;
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t slot = item / H, h = item % H;
    const training_dev::GdnChunk ch =
        training_dev::gdn_slot_chunk(p.seq_offsets, p.off_dtype, p.N, p.T, p.BT, slot);
    const int64_t row0 = ch.row0, rows = ch.len;
    if (rows <= 0) continue;  // uniform: the whole block skips the slot
    const int L = static_cast<int>(rows);
    const int64_t base = row0 * rs + h * p.BT;  // (chunk row 0, head h, column 0)
    // 0. Stage the strictly lower part (coalesced along j).
    for (int e = tid; e < bt * bt; e += nt) {
      const int i = e / bt, j = e % bt;
      if (j <= i) a[tri(i, j)] = j < i && i < L ? load_a<C>(p, base + i * rs + j) : C(0);
    }
    __syncthreads();
    // 1. Diagonal blocks: thread (d, c) owns column col = d·16 + c of block d.
    if (tid < nb * kBlk) {
      const int r0 = (tid / kBlk) * kBlk, col = tid;
      for (int r = col; r < r0 + kBlk; ++r) {
        C v = r == col ? C(1) : C(0);
        for (int k = col; k < r; ++k) v -= a[tri(r, k)] * x[tri(k, col)];
        x[tri(r, col)] = v;
      }
    }
    __syncthreads();
    // 2. Off-diagonal blocks, block row bi from the top; element e of the bi·256 is (j, r, c).
    for (int bi = 1; bi < nb; ++bi) {
      const int i0 = bi * kBlk;
      for (int e = tid; e < bi * kSq; e += nt) {
        const int j = e / kSq, r = (e / kBlk) % kBlk, c = e % kBlk;
        const int col = j * kBlk + c;
        C v = C(0);  // Σ_{k=j·16}^{i0−1} A[i0 + r][k]·X[k][col]; X[k][col] = 0 for k < col
        for (int k = col; k < i0; ++k) v += a[tri(i0 + r, k)] * x[tri(k, col)];
        s[j][r][c] = v;
      }
      __syncthreads();
      for (int e = tid; e < bi * kSq; e += nt) {
        const int j = e / kSq, r = (e / kBlk) % kBlk, c = e % kBlk;
        C v = C(0);  // Σ_k X_ii[r][k]·S_j[k][c]; X_ii[r][k] = 0 for k > r
        for (int k = 0; k <= r; ++k) v += x[tri(i0 + r, i0 + k)] * s[j][k][c];
        x[tri(i0 + r, j * kBlk + c)] = -v;
      }
      __syncthreads();
    }
    // 3. Ai's L rows of the chunk: X on and below the diagonal, zero above.
    for (int e = tid; e < L * bt; e += nt) {
      const int i = e / bt, j = e % bt;
      store_ai(p, base + i * rs + j, j <= i ? x[tri(i, j)] : C(0));
    }
    __syncthreads();  // a and x free for the next item
  }
}

}  // namespace recops::ops::solve_tril_ns
