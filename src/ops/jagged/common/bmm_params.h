// ops/jagged/common/bmm_params.h: the flat params of the jagged matmuls (jagged_dense_bmm and
// jagged_jagged_bmm), shared by the entries, the goldens, the CPU and the CUDA paths. Both ops are
// one GEMM per sequence b, C_b = A_b · B_b, with row-major C; bmm_gemm() gives each one's
// geometry as element offsets and strides, so that one CPU and one CUDA path serve both.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

#if defined(__CUDACC__)
#define RECOPS_BMM_HD __host__ __device__
#else
#define RECOPS_BMM_HD
#endif

namespace recops::ops::bmm {

enum class BmmMode : int {
  jagged_dense,   // x [total_L, K] · y[b] [K, N] -> z [total_L, N]; rows l >= n_b get 0
  jagged_jagged,  // x(b)^T [M, n_b] · y(b) [n_b, N] -> z [B, M, N]
};

struct BmmParams {
  BmmMode mode = BmmMode::jagged_dense;
  const void* x = nullptr;  // [total_L, K or M], row stride x_row_stride, last stride 1
  const void* y = nullptr;  // jagged_dense: [B, K, N] strides y_sb, y_sk, y_sn;
                            // jagged_jagged: [total_L, N], row stride y_sk, y_sn = 1
  void* z = nullptr;        // contiguous: [total_L, N] or [B, M, N]
  int64_t x_row_stride = 0;
  int64_t y_sb = 0, y_sk = 0, y_sn = 1;
  DType dtype = DType::fp32;          // of x, y and z
  const void* seq_offsets = nullptr;  // [B+1] int32 or int64, element stride offsets_stride
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  int64_t B = 0;
  int64_t total_L = 0;
  int64_t max_L = 0;  // n_b = min(L_b, max_L)
  int64_t M = 0;      // jagged_jagged: x's width (z's rows per sequence)
  int64_t K = 0;      // jagged_dense: the inner width
  int64_t N = 0;      // z's columns
  bool allow_tf32 = false;
  bool plain = false;  // reference only: the double standard's plain same-precision baseline
  int device_index = 0;
  // CUDA jagged_jagged_bmm split along l (bmm_split_chunks): `chunks` partial blocks per
  // sequence, chunk c covering rows [c * chunk_rows, (c + 1) * chunk_rows) of l < n_b, kept in
  // `workspace` as the accumulator type, [B, chunks, M, N]; 1 = no split.
  int64_t chunks = 1;
  int64_t chunk_rows = 0;
  void* workspace = nullptr;
};

// The CUDA split of jagged_jagged_bmm, from host-known sizes only (no offsets read): only when the
// (sequence, 64 x 64 tile) work items are too few to fill the GPU (< kSplitMinItems) and a
// sequence may be longer than kSplitRows; at most kSplitMaxChunks chunks and kSplitMaxBytes of
// workspace. Sets p->chunks and p->chunk_rows; returns the workspace bytes (0: no split).
inline constexpr int64_t kSplitMinItems = 264, kSplitRows = 4096, kSplitMaxChunks = 32;
inline constexpr int64_t kSplitMaxBytes = int64_t{256} << 20;
inline int64_t bmm_split_chunks(BmmParams* p) {
  p->chunks = 1;
  p->chunk_rows = 0;
  if (p->mode != BmmMode::jagged_jagged || p->B == 0 || p->M == 0 || p->N == 0) return 0;
  const int64_t items = p->B * ((p->M + 63) / 64) * ((p->N + 63) / 64);
  if (items >= kSplitMinItems) return 0;  // enough work items: no split
  const int64_t rows = p->max_L < p->total_L ? p->max_L : p->total_L;  // every n_b <= rows
  const int64_t per_chunk = p->B * p->M * p->N * (p->dtype == DType::fp64 ? 8 : 4);
  int64_t chunks = (rows + kSplitRows - 1) / kSplitRows;
  if (chunks > kSplitMaxChunks) chunks = kSplitMaxChunks;
  if (chunks * per_chunk > kSplitMaxBytes) chunks = kSplitMaxBytes / per_chunk;
  if (chunks < 2) return 0;
  p->chunks = chunks;
  p->chunk_rows = (rows + chunks - 1) / chunks;
  return chunks * per_chunk;
}

// Sequence b's GEMM: C (rows x N) = A (rows x inner) · B (inner x N), with
//   A(i, k) = x[a + i*a_si + k*a_sk], B(k, j) = y[b + k*b_sk + j*b_sj], C(i, j) = z[c + i*c_si +
//   j].
struct BmmGemm {
  int64_t rows = 0, inner = 0;
  int64_t a = 0, a_si = 0, a_sk = 0;
  int64_t b = 0, b_sk = 0, b_sj = 0;
  int64_t c = 0, c_si = 0;
};

// `o`: the sequence's first row; `n`: its rows taking part, min(L_b, max_L).
RECOPS_BMM_HD inline BmmGemm bmm_gemm(const BmmParams& p, int64_t b, int64_t o, int64_t n) {
  BmmGemm g;
  if (p.mode == BmmMode::jagged_dense) {
    g.rows = n, g.inner = p.K;
    g.a = o * p.x_row_stride, g.a_si = p.x_row_stride, g.a_sk = 1;
    g.b = b * p.y_sb, g.b_sk = p.y_sk, g.b_sj = p.y_sn;
    g.c = o * p.N, g.c_si = p.N;
  } else {
    g.rows = p.M, g.inner = n;
    g.a = o * p.x_row_stride, g.a_si = 1, g.a_sk = p.x_row_stride;
    g.b = o * p.y_sk, g.b_sk = p.y_sk, g.b_sj = 1;
    g.c = b * p.M * p.N, g.c_si = p.N;
  }
  return g;
}

// Offset i of seq_offsets clamped into [0, total_L] (invalid offsets with validation off give
// unspecified values, never an out-of-bounds access).
RECOPS_BMM_HD inline int64_t bmm_offset(const BmmParams& p, int64_t i) {
  const int64_t k = i * p.offsets_stride;
  const int64_t v = p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                                    : static_cast<const int32_t*>(p.seq_offsets)[k];
  return v < 0 ? 0 : (v > p.total_L ? p.total_L : v);
}

}  // namespace recops::ops::bmm
