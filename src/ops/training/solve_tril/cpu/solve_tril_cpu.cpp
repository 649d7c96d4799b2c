// training/solve_tril/cpu/solve_tril_cpu.cpp: the optimized CPU path (training_ops.md §4.3's
// method). Work items are (chunk, head) pairs, split statically over the threads; each item's
// output rows come from that item alone, so results do not depend on the thread count.
//
// Per item: the chunk's strictly lower A (a tail chunk of L < BT rows is padded with zero rows,
// which leaves its leading principal block's inverse unchanged) is loaded into a BT x BT tile of
// the compute type C (fp32; fp64 for fp64 input). Then
//   1. each 16 x 16 diagonal block D_ii is inverted by forward substitution, row by row:
//      X_r = e_r - sum_{k<r} a_rk X_k (the row updates run over contiguous columns);
//   2. the off-diagonal blocks follow block forward substitution (the block rule
//      Ai_21 = -Ai_22 A_21 Ai_11 for two blocks, generalised to four):
//      Ai_ij = -Ai_ii · sum_{j<=k<i} A_ik Ai_kj, block row after block row.
// Every dot is an fp32 sum in order (no fp64 accumulation): the accuracy standard is `double`
// against the plain fp32 forward substitution (README, "Accuracy").
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/solve_tril/impls.h"

namespace recops::ops::solve_tril_ns {
namespace {

constexpr int64_t kB = 16;  // the diagonal block size
constexpr int64_t kMax = 64;

template <class T>
auto widen(T v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return v;
  else
    return to_float(v);
}

template <class U, class C>
U narrow(C v) {
  if constexpr (std::is_same_v<U, C>)
    return v;
  else if constexpr (std::is_same_v<U, double> || std::is_same_v<U, float>)
    return static_cast<U>(v);
  else if constexpr (std::is_same_v<C, float>)
    return from_float<U>(v);
  else
    return from_double<U>(v);
}

// One (chunk, head): a points at the chunk's first row of head h (row stride rs), o likewise.
template <class T, class U, class C>
void solve_one(const T* a, U* o, int64_t rs, int64_t L, int64_t BT, C* A, C* X) {
  // A: the strictly lower part, zero elsewhere (and in the padded rows).
  for (int64_t i = 0; i < BT; ++i) {
    C* ar = A + i * kMax;
    for (int64_t j = 0; j < BT; ++j) ar[j] = C(0);
    if (i < L)
      for (int64_t j = 0; j < i; ++j) ar[j] = static_cast<C>(widen(a[i * rs + j]));
  }
  for (int64_t i = 0; i < BT; ++i)
    for (int64_t j = 0; j < BT; ++j) X[i * kMax + j] = C(0);
  const int64_t nb = BT / kB;
  // 1. Diagonal blocks: X_r = e_r - sum_{k<r} a_rk X_k within the block.
  for (int64_t d = 0; d < nb; ++d) {
    const int64_t r0 = d * kB;
    for (int64_t r = r0; r < r0 + kB; ++r) {
      C* xr = X + r * kMax + r0;
      xr[r - r0] = C(1);
      for (int64_t k = r0; k < r; ++k) {
        const C f = A[r * kMax + k];
        const C* xk = X + k * kMax + r0;
        for (int64_t c = 0; c < kB; ++c) xr[c] -= f * xk[c];
      }
    }
  }
  // 2. Off-diagonal blocks, block row i from the top, columns j < i:
  //    S = sum_{j<=k<i} A_ik X_kj (16 x 16), X_ij = -X_ii S.
  C S[kB * kB];
  for (int64_t i = 1; i < nb; ++i) {
    for (int64_t j = 0; j < i; ++j) {
      for (int64_t r = 0; r < kB; ++r) {
        C* sr = S + r * kB;
        for (int64_t c = 0; c < kB; ++c) sr[c] = C(0);
        const C* ar = A + (i * kB + r) * kMax;
        for (int64_t k = j * kB; k < i * kB; ++k) {
          const C f = ar[k];
          const C* xk = X + k * kMax + j * kB;
          for (int64_t c = 0; c < kB; ++c) sr[c] += f * xk[c];
        }
      }
      for (int64_t r = 0; r < kB; ++r) {
        C* xr = X + (i * kB + r) * kMax + j * kB;
        const C* dr = X + (i * kB + r) * kMax + i * kB;
        C acc[kB];
        for (int64_t c = 0; c < kB; ++c) acc[c] = C(0);
        for (int64_t k = 0; k < kB; ++k) {
          const C f = dr[k];
          const C* sk = S + k * kB;
          for (int64_t c = 0; c < kB; ++c) acc[c] += f * sk[c];
        }
        for (int64_t c = 0; c < kB; ++c) xr[c] = -acc[c];
      }
    }
  }
  // Ai rows of the chunk: the inverse's row, zero above the diagonal (and past the chunk).
  for (int64_t i = 0; i < L; ++i) {
    U* orow = o + i * rs;
    const C* xr = X + i * kMax;
    for (int64_t j = 0; j < BT; ++j) orow[j] = narrow<U>(j <= i ? xr[j] : C(0));
  }
}

template <class T, class U>
void solve(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* a = static_cast<const T*>(p.a);
  U* out = static_cast<U*>(p.out);
  const int64_t H = p.H, BT = p.BT, rs = H * BT;
  const int64_t items = static_cast<int64_t>(chunks.size()) * H;
  core::parallel_for(items, 4, threads, [&](int64_t begin, int64_t end) {
    std::vector<C> A(kMax * kMax), X(kMax * kMax);
    for (int64_t it = begin; it < end; ++it) {
      const training::TimeChunk& c = chunks[static_cast<size_t>(it / H)];
      const int64_t h = it % H;
      const int64_t at = c.row0 * rs + h * BT;
      solve_one<T, U, C>(a + at, out + at, rs, c.rows, BT, A.data(), X.data());
    }
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  bool ok = false;
  visit_floating(p.in_dtype, [&](auto t) {
    ok = visit_floating(
        p.out_dtype, [&](auto u) { solve<decltype(t), decltype(u)>(p, chunks, ctx.num_threads); });
  });
  if (!ok) return Status(StatusCode::internal, "solve_tril: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::solve_tril_ns
