// stem_indexer, CUDA (spec §3.2, §8). cuda_sm80's default (tune path 3): a cuBLAS scoring GEMM
// writes each row's raw scores into the row's own sparse_indices slots (path 2: our mma.sync
// GEMM, score_gemm_kernel, writes rank keys), then select_regs_kernel (Kmax <= 1024) or the
// selection part of the fused kernel selects in place. cuda_sm90 (stem_indexer_cuda_sm90, end of
// file) scores with the Hopper GEMM of score_sm90.cu and selects the same way. Paths 0 and 1: one
// fused kernel, scoring and selection per tile, described first.
//
// A tile is 16 rows of one (batch, KV head): rows lin = 16·t .. 16·t+15 of the G·Qmax rows
// (query block i = lin / G, head hq = hk·G + lin % G), so its rows share the key blocks and have
// nearly the same causal bound. Tiles run heaviest first (latest query blocks of every section).
//
// Scoring: the 8 warps split the visible key blocks (up to the tile's largest V; causal tiles
// beyond it are never touched) into runs of 32; each warp computes a 16 x 32 block of
// ⟨qflat, kflat⟩ with mma.sync m16n8k16 (bf16 in, fp32 accumulation). Fragments come straight
// from global memory with 16-byte loads: lane (gid, tig) loads elements [k0 + 8·tig, +8) of query
// rows gid and gid + 8 and of key block gid of each 8-block n-tile; the two k16 steps of a
// 32-wide chunk use pairs (0,1) and (2,3) of those eight elements in both operands, a fixed
// permutation of k that leaves the dot product unchanged. The epilogue forms
// S = fl32(fl32(dot · 1/R²) + vbias) (no contraction) and stores the §3.2 rank key κ (fp32 or
// bf16 by topk_score_precision) as a sortable uint32 in shared memory, [16][Kmax].
//
// Selection: a warp per row. K̂ comes from stem_rules.h (the same fp32 code as the reference).
// When 0 < K̂ < |C| a radix select with 8-bit digits (4 passes, a 256-bin histogram per warp in
// shared memory) finds the threshold τ and how many candidates equal to τ to take; then the
// row is written in ascending id order with ballots: the sink blocks, every candidate above τ
// and the first candidates equal to τ (ties to the lower id), the window blocks, then -1 up to
// Kmax, and sparse_seq_len. The result is deterministic (no atomics reach the output).
//
// Score buffer: shared memory ([16][Kmax] keys) when it fits, i.e. Kmax ≤ (shared memory per
// block − 9 KiB)/64 (3488 key blocks, 446K tokens, on sm_90; 2464 on sm_80). Otherwise, or when
// the tune parameter path = 1 forces it, the keys of row r live in r's own output row of
// sparse_indices (Kmax int32 slots, exactly one key per slot): the selection then reads them back
// from global memory (L1/L2) and overwrites the row in place. That is safe because the row is
// written in ascending slot order and slot p never receives an id before its key has been read:
// sink ids go to slots [0, I) (no candidate keys there); a candidate id j lands in slot ≤ j, and
// every lane of a 32-wide chunk reads its key before the chunk's ballot decides any write; window
// ids and the -1 tail come after the candidate loop. So every size runs (the 512K and 1M shapes),
// with no workspace. Lengths are read on the device and clamped, so unvalidated values never
// address memory outside the tensors.
#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "core/cuda/cublas.h"
#include "core/cuda/launch.h"
#include "core/tuning.h"
#include "ops/stem/indexer/cuda/lengths.cuh"
#include "ops/stem/indexer/cuda/score_sm90.h"
#include "ops/stem/indexer/impls.h"
#include "ops/stem/common/stem_rules.h"

namespace recops::ops {
namespace {

constexpr const char* kOp = "stem_indexer";
constexpr int kRows = 16;
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kNTiles = 4;  // n-tiles of 8 key blocks per warp pass (32 key blocks)
constexpr size_t kHistBytes = kWarps * 256 * sizeof(uint32_t);

// vbias, the lengths, sizes and rules: stem_cuda::ScoreCommon (lengths.cuh).
struct Args : stem_cuda::ScoreCommon {
  const uint16_t* qflat;
  const uint16_t* kflat;
  int64_t qs0, qs1, qs2, ks0, ks1, ks2;
  int32_t* indices;
  int32_t* seq_len;
  int64_t tiles_per_section, num_tiles;
  bool vec;          // 16-byte loads are aligned (Df % 8 == 0, strides and bases aligned)
  bool keys_global;  // score keys in the rows of sparse_indices instead of shared memory
  bool score;        // false: the keys are already in the rows (a scoring GEMM ran first)
  bool raw;          // the rows hold fl32(dot · 1/R²) as fp32 (cuBLAS, path 3), not rank keys
  bool vec_out;      // sparse_indices rows start 16-byte aligned (base aligned, Kmax % 4 == 0)
};

using stem_cuda::Lengths;
__device__ __forceinline__ Lengths batch_lengths(const Args& a, int64_t b) {
  return stem_cuda::batch_lengths(a.lens, b, a.Qmax * a.rules.Bs, a.Kmax * a.rules.Bs);
}

// Elements [k, k + 8) of a bf16 row of length Df as four bf16 pairs (zeros past Df or for a null
// row).
__device__ __forceinline__ uint4 load8(const uint16_t* row, int64_t k, int64_t Df, bool vec) {
  uint4 r = make_uint4(0, 0, 0, 0);
  if (row == nullptr || k >= Df) return r;
  if (vec) return __ldg(reinterpret_cast<const uint4*>(row + k));
  uint32_t w[4] = {0, 0, 0, 0};
  for (int e = 0; e < 8; ++e)
    if (k + e < Df) w[e / 2] |= static_cast<uint32_t>(__ldg(row + k + e)) << (16 * (e % 2));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__global__ void __launch_bounds__(kThreads) stem_indexer_kernel(Args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  uint32_t* hist_all = reinterpret_cast<uint32_t*>(smem);
  uint32_t* keys_smem = reinterpret_cast<uint32_t*>(smem + kHistBytes);  // [kRows][Kmax]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gid = lane >> 2, tig = lane & 3;
  const unsigned lt_mask = (1u << lane) - 1u;
  const stem::StemRules& r = a.rules;
  const int64_t sections = a.B * a.Nk, rows_total = a.G * a.Qmax;

  for (int64_t tile = blockIdx.x; tile < a.num_tiles; tile += gridDim.x) {
    const int64_t sec = tile % sections, t = a.tiles_per_section - 1 - tile / sections;
    const int64_t b = sec / a.Nk, hk = sec % a.Nk;
    const Lengths len = batch_lengths(a, b);
    const int64_t Lq = len.q, Lk = len.k, Lp = len.p;
    // Visible counts of the tile's rows (every thread computes them; 16 small calls).
    int64_t vmax = 0;
    for (int rr = 0; rr < kRows; ++rr) {
      const int64_t lin = t * kRows + rr;
      if (lin < rows_total) {
        const int64_t v = stem::visible_blocks(r, Lq, Lk, Lp, lin / a.G);
        vmax = v > vmax ? v : vmax;
      }
    }
    // ---- scoring (skipped when score_gemm_kernel wrote the keys) ---------------------------
    const uint16_t* qrow[2];
    for (int h = 0; h < 2; ++h) {
      const int64_t lin = t * kRows + gid + 8 * h;
      qrow[h] = nullptr;
      if (lin < rows_total) {
        const int64_t i = lin / a.G, hq = hk * a.G + lin % a.G;
        if (stem::visible_blocks(r, Lq, Lk, Lp, i) > 0)
          qrow[h] = a.qflat + b * a.qs0 + hq * a.qs1 + i * a.qs2;
      }
    }
    const uint16_t* kbase = a.kflat + b * a.ks0 + hk * a.ks1;
    const float* vb = a.vbias + b * a.vs0 + hk * a.vs1;
    // The key row of tile row rr (nullptr past the section's rows in the global buffer).
    auto key_row = [&](int rr) -> uint32_t* {
      if (!a.keys_global) return keys_smem + rr * a.Kmax;
      const int64_t lin = t * kRows + rr;
      if (lin >= rows_total) return nullptr;
      const int64_t i = lin / a.G, hq = hk * a.G + lin % a.G;
      return reinterpret_cast<uint32_t*>(a.indices + ((b * a.Nq + hq) * a.Qmax + i) * a.Kmax);
    };
    uint32_t* const my_keys[2] = {key_row(gid), key_row(gid + 8)};
    for (int64_t j0 = int64_t{warp} * 32; a.score && j0 < vmax; j0 += kWarps * 32) {
      float acc[kNTiles][4];
      const uint16_t* krow[kNTiles];
      for (int n = 0; n < kNTiles; ++n) {
        for (int e = 0; e < 4; ++e) acc[n][e] = 0.0f;
        const int64_t j = j0 + n * 8 + gid;
        krow[n] = j < vmax ? kbase + j * a.ks2 : nullptr;
      }
      const int nt =
          static_cast<int>((vmax - j0 + 7) / 8 < kNTiles ? (vmax - j0 + 7) / 8 : kNTiles);
      for (int64_t k0 = 0; k0 < a.Df; k0 += 32) {
        const int64_t kk = k0 + 8 * tig;
        const uint4 lo = load8(qrow[0], kk, a.Df, a.vec);
        const uint4 hi = load8(qrow[1], kk, a.Df, a.vec);
#pragma unroll
        for (int n = 0; n < kNTiles; ++n) {
          if (n < nt) {
            const uint4 bk = load8(krow[n], kk, a.Df, a.vec);
            mma_bf16(acc[n], lo.x, hi.x, lo.y, hi.y, bk.x, bk.y);
            mma_bf16(acc[n], lo.z, hi.z, lo.w, hi.w, bk.z, bk.w);
          }
        }
      }
#pragma unroll
      for (int n = 0; n < kNTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t j = j0 + n * 8 + 2 * tig + (e % 2);
          uint32_t* kr = my_keys[e / 2];
          if (j < vmax && kr != nullptr) {
            const float s = __fadd_rn(__fmul_rn(acc[n][e], a.inv_r2), vb[j * a.vs2]);
            kr[j] = stem::rank_key(s, a.precision);
          }
        }
    }
    __syncthreads();
    // ---- selection, a warp per row ----------------------------------------------------------
    uint32_t* hist = hist_all + warp * 256;
    for (int rr = warp; rr < kRows; rr += kWarps) {
      const int64_t lin = t * kRows + rr;
      if (lin >= rows_total) continue;
      const int64_t i = lin / a.G, hq = hk * a.G + lin % a.G;
      const int64_t row_id = (b * a.Nq + hq) * a.Qmax + i;
      int32_t* out = a.indices + row_id * a.Kmax;
      const int64_t V = stem::visible_blocks(r, Lq, Lk, Lp, i);
      int64_t pos = 0;
      if (V > 0) {
        const stem::Forced f = stem::forced_set(r, V);
        const int64_t nc = f.w_begin - f.s_end;
        const int64_t K = stem::budget_k(r, Lq, Lk, Lp, i, nc);
        const uint32_t* key = key_row(rr);  // for the global buffer: this very output row
        // Key j: as stored, or formed here from path 3's raw scores (S = fl32(raw + vbias)).
        auto key_at = [&](int64_t j) -> uint32_t {
          const uint32_t x = key[j];
          return a.raw ? stem::rank_key(__fadd_rn(__uint_as_float(x), vb[j * a.vs2]), a.precision)
                       : x;
        };
        uint32_t tau = 0;
        int64_t need_eq = INT64_MAX;  // K̂ == |C|: every candidate (all keys are > 0)
        if (K == 0) {
          tau = 0xffffffffu;
          need_eq = 0;
        } else if (K < nc) {
          uint32_t prefix = 0, mask = 0;
          int64_t rem = K;
          for (int shift = 24; shift >= 0; shift -= 8) {
            for (int x = lane; x < 256; x += 32) hist[x] = 0;
            __syncwarp();
            for (int64_t j = f.s_end + lane; j < f.w_begin; j += 32) {
              const uint32_t k = key_at(j);
              if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255u], 1u);
            }
            __syncwarp();
            // Lane l owns digits 255 - 8l down to 248 - 8l (descending).
            int64_t s = 0;
            for (int e = 0; e < 8; ++e) s += hist[255 - 8 * lane - e];
            int64_t incl = s;
            for (int o = 1; o < 32; o <<= 1) {
              const int64_t y = __shfl_up_sync(0xffffffffu, incl, o);
              if (lane >= o) incl += y;
            }
            const int64_t excl = incl - s;
            const unsigned found = __ballot_sync(0xffffffffu, excl < rem && rem <= incl);
            const int src = __ffs(found) - 1;
            int digit = 0;
            int64_t new_rem = rem;
            if (lane == src) {
              int64_t cum = excl;
              for (int e = 0; e < 8; ++e) {
                const int d = 255 - 8 * lane - e;
                const int64_t c = hist[d];
                if (cum + c >= rem) {
                  digit = d;
                  new_rem = rem - cum;
                  break;
                }
                cum += c;
              }
            }
            digit = __shfl_sync(0xffffffffu, digit, src);
            rem = __shfl_sync(0xffffffffu, new_rem, src);
            prefix |= static_cast<uint32_t>(digit) << shift;
            mask |= 0xffu << shift;
            __syncwarp();
          }
          tau = prefix;
          need_eq = rem;
        }
        for (int64_t j = lane; j < f.s_end; j += 32) out[j] = static_cast<int32_t>(j);
        pos = f.s_end;
        int64_t eq_seen = 0;
        for (int64_t base = f.s_end; base < f.w_begin; base += 32) {
          const int64_t j = base + lane;
          const bool in = j < f.w_begin;
          const uint32_t k = in ? key_at(j) : 0u;
          const bool eq = in && k == tau;
          const unsigned eq_mask = __ballot_sync(0xffffffffu, eq);
          const bool take =
              (in && k > tau) || (eq && eq_seen + __popc(eq_mask & lt_mask) < need_eq);
          const unsigned take_mask = __ballot_sync(0xffffffffu, take);
          if (take) out[pos + __popc(take_mask & lt_mask)] = static_cast<int32_t>(j);
          pos += __popc(take_mask);
          eq_seen += __popc(eq_mask);
        }
        for (int64_t j = f.w_begin + lane; j < V; j += 32)
          out[pos + (j - f.w_begin)] = static_cast<int32_t>(j);
        pos += V - f.w_begin;
      }
      for (int64_t x = pos + lane; x < a.Kmax; x += 32) out[x] = -1;
      if (lane == 0) a.seq_len[row_id] = static_cast<int32_t>(pos);
    }
    __syncthreads();  // the key buffer is reused by the next tile
  }
}

// ---- the scoring GEMM of the two-kernel path (tune path = 2) ------------------------------------
// A CTA computes a 128 x 64 tile of one section's scores: rows lin = 128·mt .. +127 of the G·Qmax
// rows of (b, KV head) (query block lin / G, head hk·G + lin % G), key blocks j0 .. j0 + 63 with
// j0 below the tile's largest V (causal tiles beyond it exit at once). K = Df in chunks of 64,
// staged by cp.async into two shared-memory buffers (zero-filled past Df and for rows that do
// not exist); 8 warps as 4 (M, 32 rows) x 2 (N, 32 key blocks); fragments by ldmatrix,
// mma.sync m16n8k16 bf16 with fp32 accumulation. The epilogue forms the same
// S = fl32(fl32(dot · 1/R²) + vbias) and rank key as the fused kernel and stores it into the
// row's own sparse_indices slots; the select-only pass of stem_indexer_kernel follows.
constexpr int kGm = 128, kGn = 64, kGk = 64, kGld = kGk + 8;
constexpr size_t kGemmSmem = static_cast<size_t>(2 * (kGm + kGn) * kGld) * sizeof(uint16_t);

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void ldsm4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__global__ void __launch_bounds__(kThreads)
    score_gemm_kernel(Args a, int64_t m_tiles, int64_t n_tiles, int64_t total) {
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* sQ = reinterpret_cast<uint16_t*>(smem);  // [2][kGm][kGld]
  uint16_t* sK = sQ + 2 * kGm * kGld;                // [2][kGn][kGld]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gid = lane >> 2, tig = lane & 3, wm = warp >> 1, wn = warp & 1;
  const stem::StemRules& r = a.rules;
  const int64_t rows_total = a.G * a.Qmax;
  const int ch = tid % 8, rsub = tid / 8;  // 16-byte column and first row of this thread's copies

  for (int64_t w = blockIdx.x; w < total; w += gridDim.x) {
    const int64_t nt = w % n_tiles, mt = w / n_tiles % m_tiles, sec = w / (n_tiles * m_tiles);
    const int64_t b = sec / a.Nk, hk = sec % a.Nk;
    const Lengths len = batch_lengths(a, b);
    const int64_t Lq = len.q, Lk = len.k, Lp = len.p;
    const int64_t lin0 = mt * kGm;
    const int64_t lin1 = (lin0 + kGm < rows_total ? lin0 + kGm : rows_total) - 1;
    // V is non-decreasing in the query block below Qb (constant when non-causal or decode) and 0
    // from Qb on, so the tile's largest V is that of its last row below Qb.
    const int64_t qb = stem::ceil_div(Lq, r.Bs);
    const int64_t i_last = lin1 / a.G < qb - 1 ? lin1 / a.G : qb - 1;
    const int64_t vmax = i_last >= lin0 / a.G ? stem::visible_blocks(r, Lq, Lk, Lp, i_last) : 0;
    const int64_t j0 = nt * kGn;
    if (j0 >= vmax) continue;  // uniform across the CTA

    __syncthreads();  // the previous tile's readers of shared memory are done
    // This thread's copy sources: Q rows rsub + 32·k (k < 4), K rows rsub + 32·k (k < 2).
    const uint16_t* qsrc[4];
    const uint16_t* ksrc[2];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t lin = lin0 + rsub + 32 * k;
      qsrc[k] = nullptr;
      if (lin < rows_total) {
        const int64_t i = lin / a.G, hq = hk * a.G + lin % a.G;
        if (i * r.Bs < Lq) qsrc[k] = a.qflat + b * a.qs0 + hq * a.qs1 + i * a.qs2 + ch * 8;
      }
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int64_t j = j0 + rsub + 32 * k;
      ksrc[k] = j < vmax ? a.kflat + b * a.ks0 + hk * a.ks1 + j * a.ks2 + ch * 8 : nullptr;
    }
    auto load = [&](int64_t kc, int buf) {
      const bool kin = kc * kGk + ch * 8 < a.Df;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const bool ok = kin && qsrc[k] != nullptr;
        cp16(smem_u32(sQ + (buf * kGm + rsub + 32 * k) * kGld + ch * 8),
             ok ? qsrc[k] + kc * kGk : a.qflat, ok);
      }
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const bool ok = kin && ksrc[k] != nullptr;
        cp16(smem_u32(sK + (buf * kGn + rsub + 32 * k) * kGld + ch * 8),
             ok ? ksrc[k] + kc * kGk : a.kflat, ok);
      }
    };
    float acc[2][4][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;
    const int64_t kchunks = (a.Df + kGk - 1) / kGk;
    // ldmatrix lane offsets (elements): A rows lane%16, column (lane/16)·8; B rows
    // lane%8 + (lane/16)·8, column ((lane/8)%2)·8.
    const int a_off = (wm * 32 + (lane & 15)) * kGld + (lane >> 4) * 8;
    const int b_off = (wn * 32 + (lane & 7) + (lane >> 4) * 8) * kGld + ((lane >> 3) & 1) * 8;
    load(0, 0);
    asm volatile("cp.async.commit_group;\n" ::);
    for (int64_t kc = 0; kc < kchunks; ++kc) {
      const int buf = static_cast<int>(kc & 1);
      if (kc + 1 < kchunks) load(kc + 1, buf ^ 1);
      asm volatile("cp.async.commit_group;\n" ::);
      asm volatile("cp.async.wait_group 1;\n" ::);
      __syncthreads();
      const uint32_t qa = smem_u32(sQ + buf * kGm * kGld + a_off);
      const uint32_t kb = smem_u32(sK + buf * kGn * kGld + b_off);
#pragma unroll
      for (int kk = 0; kk < kGk / 16; ++kk) {
        uint32_t af[2][4], bfr[2][4];
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) ldsm4(qa + (mi * 16 * kGld + kk * 16) * 2, af[mi]);
#pragma unroll
        for (int np = 0; np < 2; ++np) ldsm4(kb + (np * 16 * kGld + kk * 16) * 2, bfr[np]);
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
          for (int ni = 0; ni < 4; ++ni)
            mma_bf16(acc[mi][ni], af[mi][0], af[mi][1], af[mi][2], af[mi][3],
                     bfr[ni / 2][2 * (ni % 2)], bfr[ni / 2][2 * (ni % 2) + 1]);
      }
      __syncthreads();  // this buffer is free for the chunk after next
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    // Epilogue: keys into the rows' own output slots.
    const float* vb = a.vbias + b * a.vs0 + hk * a.vs1;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t lin = lin0 + wm * 32 + mi * 16 + gid + 8 * h;
        if (lin >= rows_total) continue;
        const int64_t i = lin / a.G, hq = hk * a.G + lin % a.G;
        uint32_t* out =
            reinterpret_cast<uint32_t*>(a.indices + ((b * a.Nq + hq) * a.Qmax + i) * a.Kmax);
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int64_t j = j0 + wn * 32 + ni * 8 + 2 * tig + e;
            if (j < vmax) {
              const float sc =
                  __fadd_rn(__fmul_rn(acc[mi][ni][2 * h + e], a.inv_r2), vb[j * a.vs2]);
              out[j] = stem::rank_key(sc, a.precision);
            }
          }
      }
  }
}

// ---- selection with the row's keys in registers (paths 2 and 3 and cuda_sm90, Kmax <= 1024) ----
// A warp per row (rows in output order). Lane l holds slots j = 32·c + l (c < kKpl) of the row:
// the candidates' keys (formed from raw scores for path 3), 0 elsewhere (every candidate key is
// > 0, so 0 never counts). Loops over the chunks stop at the last chunk holding candidates; the
// count below is unrolled for 8, 16 or 32 chunks (warp-uniform choice), so short rows compare
// fewer registers.
//
// The K̂-th largest key τ: a bracket lo < hi with c_lo = #(keys >= lo) >= K̂ > c_hi = #(keys >= hi),
// from lo = the smallest candidate key (c_lo = |C|) and hi = the largest + 1 (c_hi = 0). Each
// step counts the keys >= a probe v strictly inside (one compare per key and one
// __reduce_add_sync) and moves lo or hi to v. The probe interpolates the scores linearly between
// the bracket's ends (the keys read back as floats) to where the count would be K̂; a step that
// leaves the count bracket unchanged (outliers, ties, non-finite ends) makes the next probe the
// bisection of the key interval, so the search ends within about 64 steps on any data (about 7 on
// random scores, against 13 for the bitwise search it replaces). A probe with exactly K̂ keys >= v
// ends it early: those keys are the selection (τ = their smallest key; every key equal to τ is
// taken). For precision 2 the search runs on the keys' high 16 bits (below). Otherwise the bracket
// closes at hi = lo + 1: τ = lo, and the first K̂ − c_hi keys equal to τ are taken (ties to the
// lower id). Then the row is written as by the fused kernel: the sink ids, the ballot-ordered
// candidates, the window ids, -1 up to Kmax (16-byte stores where aligned), and the length. Every
// key is read from memory once, before any write to the row.
constexpr int kKpl = 32;
constexpr int kSelWarps = 8;

// The score whose rank key (precision 1) is k: the inverse of stem::rank_key's bit map.
__device__ __forceinline__ float key_score(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
__device__ __forceinline__ uint32_t score_key(float s) {
  const uint32_t u = __float_as_uint(s);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// How many of key[0 .. N) are >= v (this lane).
template <int N>
__device__ __forceinline__ unsigned count_chunks(const uint32_t (&key)[kKpl], uint32_t v) {
  unsigned cnt = 0;
#pragma unroll
  for (int c = 0; c < N; ++c) cnt += key[c] >= v ? 1u : 0u;
  return cnt;
}

// key[c] = slot 32·c + lane of the row (c < N; slots past Kmax read slot 0; 0 for c >= N): the
// stored key, or for path 3 (vb non-null) the key formed from the raw score and vbias. The loads
// are unconditional so that they all issue before the first use. Then every slot that is not a
// candidate (j outside [s_end, w_begin)) becomes 0, the candidates' keys are shifted right by
// `shift`, and kmin / kmax are their smallest and largest (this lane).
template <int N>
__device__ __forceinline__ void load_chunks(uint32_t (&key)[kKpl], const uint32_t* src,
                                            const float* vb, const Args& a, int lane, int s_end,
                                            int w_begin, int shift, uint32_t& kmin,
                                            uint32_t& kmax) {
  const int kmax_i = static_cast<int>(a.Kmax);
#pragma unroll
  for (int c = N; c < kKpl; ++c) key[c] = 0u;
  if (vb == nullptr) {
#pragma unroll
    for (int c = 0; c < N; ++c) {
      const int j = c * 32 + lane;
      key[c] = src[j < kmax_i ? j : 0];
    }
  } else {
#pragma unroll
    for (int c = 0; c < N; ++c) {
      const int j = c * 32 + lane < kmax_i ? c * 32 + lane : 0;
      key[c] = stem::rank_key(__fadd_rn(__uint_as_float(src[j]), vb[j * a.vs2]), a.precision);
    }
  }
  kmin = 0xffffffffu;
  kmax = 0u;
#pragma unroll
  for (int c = 0; c < N; ++c) {
    const int j = c * 32 + lane;
    const bool cand = j >= s_end && j < w_begin;
    key[c] = cand ? key[c] >> shift : 0u;
    if (cand) {
      kmin = min(kmin, key[c]);
      kmax = max(kmax, key[c]);
    }
  }
}

// The smallest of key[0 .. N) that is >= v (this lane; 0xffffffff if none).
template <int N>
__device__ __forceinline__ uint32_t min_at_least(const uint32_t (&key)[kKpl], uint32_t v) {
  uint32_t m = 0xffffffffu;
#pragma unroll
  for (int c = 0; c < N; ++c)
    if (key[c] >= v) m = min(m, key[c]);
  return m;
}

// kRaw: path 3 (a.raw; raw scores in the rows) or not (keys in the rows), a template parameter so
// that each holds only its own loads.
template <bool kRaw>
__global__ void __launch_bounds__(kSelWarps * 32) select_regs_kernel(Args a, int64_t rows) {
  const int lane = threadIdx.x & 31;
  const unsigned lt_mask = (1u << lane) - 1u;
  const stem::StemRules& r = a.rules;
  // The block's rows share (b, hq) unless they cross a head's last row: the first row's
  // decoding and batch rules are formed once by thread 0; a warp past the crossing forms its own.
  __shared__ int64_t s_bh, s_i;
  __shared__ stem::BatchRules s_br;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kSelWarps;
  if (threadIdx.x == 0) {
    s_i = first % a.Qmax;
    s_bh = first / a.Qmax;
    const Lengths len = batch_lengths(a, s_bh / a.Nq);
    s_br = stem::batch_rules(r, len.q, len.k, len.p);
  }
  __syncthreads();
  const int64_t row = first + (threadIdx.x >> 5);
  if (row >= rows) return;
  int64_t i = s_i + (threadIdx.x >> 5), bh = s_bh;
  stem::BatchRules br = s_br;
  if (i >= a.Qmax) {
    i = row % a.Qmax;
    bh = row / a.Qmax;
    const Lengths len = batch_lengths(a, bh / a.Nq);
    br = stem::batch_rules(r, len.q, len.k, len.p);
  }
  int32_t* out = a.indices + row * a.Kmax;
  const int V = static_cast<int>(stem::visible_blocks(r, br, i));
  int pos = 0;  // Kmax <= 32·kKpl here, so slots and ids fit an int
  if (V > 0) {
    const stem::Forced f = stem::forced_set(r, V);
    const int s_end = static_cast<int>(f.s_end), w_begin = static_cast<int>(f.w_begin);
    const int nc = w_begin - s_end;
    const int K = static_cast<int>(stem::budget_k(r, br, i, nc));
    const int nch = (w_begin + 31) / 32;  // chunks holding candidates
    // Path 3's vbias row (b, hk) (the other paths store finished keys).
    const float* vb = kRaw ? a.vbias + bh / a.Nq * a.vs0 + bh % a.Nq / a.G * a.vs1 : nullptr;
    const uint32_t* src = reinterpret_cast<const uint32_t*>(out);
    uint32_t key[kKpl];
    // Precision 2 ranks bf16 roundings: the keys' low 16 bits are fixed by the sign (0 or
    // 0xffff), so the high 16 bits alone order them, and searching those keeps the bracket from
    // stepping through the 2^16 values between two neighbouring keys.
    const int shift = a.precision == 2 ? 16 : 0;
    uint32_t kmin, kmax;
    // All of the row's loads first (8, 16 or 32 chunks, unconditional: slots past w_begin, and
    // past Kmax clamped to slot 0, are read and then dropped), so that their latencies overlap.
    if (nch <= 8) {
      load_chunks<8>(key, src, vb, a, lane, s_end, w_begin, shift, kmin, kmax);
    } else if (nch <= 16) {
      load_chunks<16>(key, src, vb, a, lane, s_end, w_begin, shift, kmin, kmax);
    } else {
      load_chunks<kKpl>(key, src, vb, a, lane, s_end, w_begin, shift, kmin, kmax);
    }
    auto count_ge = [&](uint32_t v) {
      unsigned cnt = 0;
      if (nch <= 8) {
        cnt = count_chunks<8>(key, v);
      } else if (nch <= 16) {
        cnt = count_chunks<16>(key, v);
      } else {
        cnt = count_chunks<kKpl>(key, v);
      }
      return static_cast<int>(__reduce_add_sync(0xffffffffu, cnt));
    };
    uint32_t tau = 1u;      // K̂ == |C|: every candidate (keys >= 1)
    int need_eq = INT_MAX;  // take every key equal to tau
    if (K == 0) {
      tau = 0xffffffffu;
      need_eq = 0;
    } else if (K < nc) {
      // kmax <= 0xff800000 (rank_key of +inf), so hi does not wrap (nor does hi << shift).
      uint32_t lo = __reduce_min_sync(0xffffffffu, kmin);
      uint32_t hi = __reduce_max_sync(0xffffffffu, kmax) + 1u;
      int c_lo = nc, c_hi = 0;
      bool exact = false, bisect = false;
      while (hi - lo > 1u) {
        uint32_t v = lo + (hi - lo) / 2u;
        if (!bisect) {
          const float flo = key_score(lo << shift), fhi = key_score(hi << shift);
          const float fr = __fdiv_rn(static_cast<float>(c_lo - K), static_cast<float>(c_lo - c_hi));
          const float fv = __fmaf_rn(__fsub_rn(fhi, flo), fr, flo);
          if (isfinite(fv) && isfinite(flo) && isfinite(fhi)) v = score_key(fv) >> shift;
        }
        v = v <= lo ? lo + 1u : (v >= hi ? hi - 1u : v);
        const int c = count_ge(v);
        if (c == K) {
          exact = true;
          lo = v;
          break;
        }
        const int width = c_lo - c_hi;
        if (c > K) {
          lo = v;
          c_lo = c;
        } else {
          hi = v;
          c_hi = c;
        }
        bisect = !bisect && c_lo - c_hi == width;
      }
      if (exact) {
        const uint32_t m = nch <= 8    ? min_at_least<8>(key, lo)
                           : nch <= 16 ? min_at_least<16>(key, lo)
                                       : min_at_least<kKpl>(key, lo);
        tau = __reduce_min_sync(0xffffffffu, m);
      } else {
        tau = lo;
        need_eq = K - c_hi;
      }
    }
    __syncwarp();  // every lane's keys are read before the row is overwritten
    for (int j = lane; j < s_end; j += 32) out[j] = j;
    pos = s_end;
    if (need_eq == INT_MAX) {
      // Every key >= tau is taken (tau >= 1, so slots holding 0 never are).
#pragma unroll
      for (int c = 0; c < kKpl; ++c) {
        if (c >= nch) break;
        const bool take = key[c] >= tau;
        const unsigned take_mask = __ballot_sync(0xffffffffu, take);
        if (take) out[pos + __popc(take_mask & lt_mask)] = c * 32 + lane;
        pos += __popc(take_mask);
      }
    } else {
      int eq_seen = 0;
#pragma unroll
      for (int c = 0; c < kKpl; ++c) {
        if (c >= nch) break;
        const int j = c * 32 + lane;
        const bool in = j >= s_end && j < w_begin;
        const uint32_t k = key[c];
        const bool eq = in && k == tau;
        const unsigned eq_mask = __ballot_sync(0xffffffffu, eq);
        const bool take = (in && k > tau) || (eq && eq_seen + __popc(eq_mask & lt_mask) < need_eq);
        const unsigned take_mask = __ballot_sync(0xffffffffu, take);
        if (take) out[pos + __popc(take_mask & lt_mask)] = j;
        pos += __popc(take_mask);
        eq_seen += __popc(eq_mask);
      }
    }
    for (int j = w_begin + lane; j < V; j += 32) out[pos + (j - w_begin)] = j;
    pos += V - w_begin;
  }
  const int kmax_i = static_cast<int>(a.Kmax);
  if (a.vec_out) {  // row start 16-byte aligned (Kmax % 4 == 0)
    const int head = (pos + 3) & ~3;
    if (pos + lane < head && pos + lane < kmax_i) out[pos + lane] = -1;
    int4* o4 = reinterpret_cast<int4*>(out);
    for (int q = head / 4 + lane; q < kmax_i / 4; q += 32) o4[q] = make_int4(-1, -1, -1, -1);
  } else {
    for (int x = pos + lane; x < kmax_i; x += 32) out[x] = -1;
  }
  if (lane == 0) a.seq_len[row] = pos;
}

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

}  // namespace

// The largest Kmax whose [16][Kmax] score buffer fits in shared memory on device `device_index`.
Status smem_kmax_limit(int device_index, int64_t* limit) {
  const cudaDeviceProp* props = nullptr;
  RECOPS_RETURN_IF_ERROR(core::cuda::device_properties(device_index, &props));
  if (props == nullptr)
    return Status(StatusCode::internal, "cannot read the CUDA device properties");
  *limit = (static_cast<int64_t>(props->sharedMemPerBlockOptin) - static_cast<int64_t>(kHistBytes) -
            1024) /
           (kRows * 4);
  return Status::Ok();
}

// Every problem runs (the score buffer falls back to the output rows for large Kmax).
std::string stem_indexer_cuda_reason(const StemIndexerParams&) {
  return {};
}

// Tune parameter path: 3 (the default) = the scoring GEMM by cuBLAS (score_gemm_cublas, raw
// fl32(dot · 1/R²) into the output rows; `gemm_rows` query blocks per GEMM, 0 = all: on the H200 at
// B=8, 128K one GEMM per head over every block (3.07 ms) beat chunks of 512 / 256 / 128 that skip
// causal work (3.17 / 3.65 / 5.80 ms; 7c6f0ed), as cuBLAS loses efficiency on short M), then the
// selection; 2 = our mma.sync scoring GEMM (score_gemm_kernel, rank keys into the output rows;
// needs 16-byte aligned qflat/kflat rows, else path 0), then the selection; 0 = the fused kernel
// with its keys in shared memory when Kmax fits (else in the output rows); 1 = the fused kernel
// with its keys in the output rows. The selection after a GEMM is select_regs_kernel for
// Kmax <= 1024, else the fused kernel's selection alone. candidates[0] is the runtime default
// (`recops tune` times every candidate against it).
std::vector<TuneConfig> stem_indexer_cuda_candidates() {
  std::vector<TuneConfig> c;
  auto add = [&](int64_t path, int64_t rows) {
    TuneConfig t;
    t.set("path", path);
    t.set("gemm_rows", rows);
    c.push_back(t);
  };
  add(3, 0);  // one GEMM per head of the group over every query block (the runtime default)
  add(3, 512);
  add(3, 256);
  add(2, 0);  // gemm_rows is path 3's alone; the other paths carry the default value
  add(0, 0);
  add(1, 0);
  return c;
}

namespace {

// Path 3's scoring: for each head g of the group and each chunk of `chunk` query blocks, a
// strided-batched cuBLAS GEMM over the (b, KV head) sections writes, for query block i and key
// block j below the chunk's largest visible count, fl32(⟨qflat[b, hk·G+g, i], kflat[b, hk, j]⟩ ·
// 1/R²) (fp32 accumulation) into slot j of row (b, hk·G+g, i) of sparse_indices as fp32. In
// column-major terms C (keys x query blocks, ldc = Kmax) = Kᵀ-view (OP_T) x Q-view (OP_N). The
// chunk's key count comes from the host lengths when the value checks read them (causal tiles
// beyond every batch's bound are skipped), else Kmax. Sections are one batch of the GEMM when
// their strides are uniform (ks0 = Nk·ks1 and qs0 = Nq·qs1, or B = 1), else one call per batch.
// A single chunk over contiguous heads (qs1 = Qmax·qs2) is one GEMM of G·Qmax rows per batch.
Status score_gemm_cublas(const StemIndexerParams& p, int64_t chunk, const Context& ctx) {
  cublasHandle_t h = nullptr;
  RECOPS_RETURN_IF_ERROR(core::cuda::cublas_handle(static_cast<cudaStream_t>(ctx.stream), &h));
  const bool host_lens =
      static_cast<int64_t>(p.Lq.size()) == p.B && static_cast<int64_t>(p.Lk.size()) == p.B;
  int64_t qb_max = p.Qmax;
  if (host_lens) {
    qb_max = 0;
    for (int64_t b = 0; b < p.B; ++b)
      qb_max = std::max(qb_max, stem::ceil_div(p.Lq[b], p.rules.Bs));
  }
  const bool uniform =
      p.B == 1 || (p.k_stride[0] == p.Nk * p.k_stride[1] && p.q_stride[0] == p.Nq * p.q_stride[1]);
  const int64_t calls_b = uniform ? 1 : p.B, batch = uniform ? p.B * p.Nk : p.Nk;
  const float alpha = 1.0f / static_cast<float>(p.R * p.R), beta = 0.0f;
  for (int64_t c0 = 0; c0 < qb_max; c0 += chunk) {
    const int64_t c1 = std::min(qb_max, c0 + chunk);
    int64_t n = p.Kmax;
    if (host_lens) {
      n = 0;
      // V is non-decreasing below Qb and 0 from Qb on: each batch's bound is its last row in the
      // chunk below Qb.
      for (int64_t b = 0; b < p.B; ++b) {
        const int64_t lp = p.Lp.empty() ? p.Lk[b] : p.Lp[b];
        const int64_t last = std::min(c1, stem::ceil_div(p.Lq[b], p.rules.Bs)) - 1;
        if (last >= c0) n = std::max(n, stem::visible_blocks(p.rules, p.Lq[b], p.Lk[b], lp, last));
      }
    }
    if (n == 0) continue;
    // One chunk over every query block with the G heads' rows contiguous (qs1 = Qmax·qs2): the
    // G·Qmax rows of a section are one matrix, so one GEMM per section batch instead of G.
    const bool merged = c0 == 0 && c1 == qb_max && p.q_stride[1] == p.Qmax * p.q_stride[2] &&
                        p.G * p.Qmax <= INT_MAX;
    const int64_t heads = merged ? 1 : p.G;
    const int64_t m_rows = merged ? p.G * p.Qmax : c1 - c0;
    for (int64_t bb = 0; bb < calls_b; ++bb)
      for (int64_t g = 0; g < heads; ++g) {
        const uint16_t* A = p.kflat + bb * p.k_stride[0];
        const uint16_t* Bq = p.qflat + bb * p.q_stride[0] + g * p.q_stride[1] + c0 * p.q_stride[2];
        float* C = reinterpret_cast<float*>(p.indices) + ((bb * p.Nq + g) * p.Qmax + c0) * p.Kmax;
        RECOPS_CUBLAS_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m_rows),
            static_cast<int>(p.Df), &alpha, A, CUDA_R_16BF, static_cast<int>(p.k_stride[2]),
            static_cast<long long>(p.k_stride[1]), Bq, CUDA_R_16BF, static_cast<int>(p.q_stride[2]),
            static_cast<long long>(p.G * p.q_stride[1]), &beta, C, CUDA_R_32F,
            static_cast<int>(p.Kmax), static_cast<long long>(p.G * p.Qmax * p.Kmax),
            static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }
  }
  return Status::Ok();
}

}  // namespace

namespace {

Args make_args(const StemIndexerParams& p) {
  Args a{};
  stem_cuda::set_score_common(p, &a);
  a.qflat = p.qflat;
  a.kflat = p.kflat;
  a.qs0 = p.q_stride[0];
  a.qs1 = p.q_stride[1];
  a.qs2 = p.q_stride[2];
  a.ks0 = p.k_stride[0];
  a.ks1 = p.k_stride[1];
  a.ks2 = p.k_stride[2];
  a.indices = p.indices;
  a.seq_len = p.seq_len;
  a.vec = p.Df % 8 == 0 && aligned16(p.qflat) && aligned16(p.kflat);
  a.vec_out = p.Kmax % 4 == 0 && aligned16(p.indices);
  for (int d = 0; d < 3; ++d) a.vec = a.vec && p.q_stride[d] % 8 == 0 && p.k_stride[d] % 8 == 0;
  a.tiles_per_section = (p.G * p.Qmax + kRows - 1) / kRows;
  a.num_tiles = p.B * p.Nk * a.tiles_per_section;
  return a;
}

// The selection after a scoring GEMM wrote the rows' keys (a.score false): select_regs_kernel for
// Kmax <= 1024, else the fused kernel's selection alone (keys in the output rows).
Status run_selection(Args a, const StemIndexerParams& p, const Context& ctx) {
  if (p.Kmax <= 32 * kKpl) {
    const int64_t rows = p.B * p.Nq * p.Qmax;
    const int64_t blocks = (rows + kSelWarps - 1) / kSelWarps;
    if (blocks > 0x7fffffff)
      return Status(StatusCode::invalid_argument,
                    "recops.stem_indexer: too many rows for one CUDA grid");
    if (a.raw)
      return RECOPS_LAUNCH_KERNEL(kOp, select_regs_kernel<true>,
                                  dim3(static_cast<unsigned>(blocks)), dim3(kSelWarps * 32), 0,
                                  ctx.stream, a, rows);
    return RECOPS_LAUNCH_KERNEL(kOp, select_regs_kernel<false>, dim3(static_cast<unsigned>(blocks)),
                                dim3(kSelWarps * 32), 0, ctx.stream, a, rows);
  }
  a.keys_global = true;
  auto* kernel = &stem_indexer_kernel;
  unsigned grid = 1;
  RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(kernel),
                                                     kThreads, kHistBytes, a.num_tiles, &grid));
  return RECOPS_LAUNCH_KERNEL(kOp, kernel, dim3(grid), dim3(kThreads), kHistBytes, ctx.stream, a);
}

}  // namespace

Status stem_indexer_cuda(const StemIndexerParams& p, const Context& ctx) {
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  Args a = make_args(p);
  if (a.num_tiles == 0) return Status::Ok();
  int64_t limit = 0;
  RECOPS_RETURN_IF_ERROR(smem_kmax_limit(p.device_index, &limit));
  static const std::vector<TuneConfig> candidates = stem_indexer_cuda_candidates();
  core::TuneQuery q;
  q.op = kOp;
  q.impl = "cuda_sm80";
  q.backend = DeviceType::cuda;
  q.device_index = p.device_index;
  q.dtype = DType::bf16;
  q.bucket = "Kmax=" + core::pow2_bucket(p.Kmax);
  q.candidates = &candidates;
  q.fallback.set("path", 3);
  q.fallback.set("gemm_rows", 0);
  TuneConfig cfg;
  RECOPS_RETURN_IF_ERROR(core::resolve_config(q, ctx, &cfg));
  int64_t path = cfg.get("path", 3);
  // cuBLAS takes int leading dimensions no smaller than Df (rows that do not overlap), and Df > 0.
  const bool gemm_ok = p.Df > 0 && p.q_stride[2] >= p.Df && p.k_stride[2] >= p.Df &&
                       p.q_stride[2] <= INT_MAX && p.k_stride[2] <= INT_MAX && p.Kmax <= INT_MAX;
  if (path == 3 && !gemm_ok) path = a.vec ? 2 : 0;
  if (path == 2 && !a.vec) path = 0;
  a.keys_global = path != 0 || p.Kmax > limit;
  a.score = path < 2;
  a.raw = path == 3;
  if (path == 3) {
    const int64_t rows = cfg.get("gemm_rows", 0);
    RECOPS_RETURN_IF_ERROR(
        score_gemm_cublas(p, rows > 0 ? rows : std::max<int64_t>(1, p.Qmax), ctx));
  } else if (path == 2) {
    const int64_t m_tiles = (p.G * p.Qmax + kGm - 1) / kGm, n_tiles = (p.Kmax + kGn - 1) / kGn;
    const int64_t total = p.B * p.Nk * m_tiles * n_tiles;
    if (total > 0) {
      const unsigned g = static_cast<unsigned>(total < 0x7fffffff ? total : 0x7fffffff);
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, score_gemm_kernel, dim3(g), dim3(kThreads),
                                                  kGemmSmem, ctx.stream, a, m_tiles, n_tiles,
                                                  total));
    }
  }
  if (path >= 2) return run_selection(a, p, ctx);
  const size_t smem =
      kHistBytes + (a.keys_global ? 0 : static_cast<size_t>(kRows * p.Kmax) * sizeof(uint32_t));
  auto* kernel = &stem_indexer_kernel;
  unsigned grid = 1;
  RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(kernel),
                                                     kThreads, smem, a.num_tiles, &grid));
  return RECOPS_LAUNCH_KERNEL(kOp, kernel, dim3(grid), dim3(kThreads), smem, ctx.stream, a);
}

std::string stem_indexer_cuda_sm90_reason(const StemIndexerParams& p) {
  return stem_sm90::score_sm90_reason(p);
}

// cuda_sm90: the Hopper scoring GEMM (score_sm90.cu: causal 128 x 128 tiles only, rank keys into
// the output rows), then the selection shared with cuda_sm80's GEMM paths.
Status stem_indexer_cuda_sm90(const StemIndexerParams& p, const Context& ctx) {
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  const std::string why = stem_sm90::score_sm90_reason(p);
  if (!why.empty()) return Status(StatusCode::not_implemented, why);
  Args a = make_args(p);
  if (a.num_tiles == 0) return Status::Ok();
  RECOPS_RETURN_IF_ERROR(stem_sm90::score_sm90(p, ctx));
  a.score = false;
  a.raw = false;
  a.keys_global = true;
  return run_selection(a, p, ctx);
}

}  // namespace recops::ops
