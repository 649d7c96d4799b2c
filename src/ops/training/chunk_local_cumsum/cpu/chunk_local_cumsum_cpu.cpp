// training/chunk_local_cumsum/cpu/chunk_local_cumsum_cpu.cpp: the optimized CPU path. The work
// items are (chunk, block of up to kCols columns); a chunk's rows are [row0, row0 + len) of the
// flattened [B·T, C] input. Per item a running fp64 vector over the block's columns walks the
// chunk's rows forward (or backward for reverse): acc += in[row]; out[row] = scale · acc. The
// column loops are contiguous (vectorised); items are split statically over the threads, and
// every output element comes from one item, so the result does not depend on the thread count.
// The running sums are fp64 for every dtype, each output rounded once: a deliberate deviation from
// training_ops.md §1's fp32 acc_t (README, "Dtypes and accuracy"): an fp32 running sum that
// cancels to near zero misses the `single` standard §5 sets for this op.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_local_cumsum/impls.h"

namespace recops::ops::chunk_local_cumsum_ns {
namespace {

constexpr int64_t kCols = 256;  // columns per item: the fp64 sums (2 KiB) stay in L1

// Where the chunks are: chunk i (in sequence order) as its first flattened row and length.
struct ChunkMap {
  const Params& p;
  std::vector<int64_t> first_chunk;  // varlen: first_chunk[n] = chunks of sequences before n

  explicit ChunkMap(const Params& prm) : p(prm) {
    if (!p.seq_offsets) return;
    first_chunk.resize(static_cast<size_t>(p.N + 1));
    first_chunk[0] = 0;
    for (int64_t n = 0; n < p.N; ++n)
      first_chunk[n + 1] = first_chunk[n] + (len(n) + p.chunk - 1) / p.chunk;
  }
  int64_t off(int64_t n) const {
    return p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[n]
                                       : static_cast<const int64_t*>(p.seq_offsets)[n];
  }
  int64_t len(int64_t n) const { return off(n + 1) - off(n); }
  int64_t per_batch() const { return (p.T + p.chunk - 1) / p.chunk; }
  int64_t count() const { return p.seq_offsets ? first_chunk.back() : p.B * per_batch(); }
  // The sequence holding chunk i (varlen), found by binary search; zero-length sequences own no
  // chunk and are skipped.
  int64_t seq_of(int64_t i) const {
    const auto it = std::upper_bound(first_chunk.begin(), first_chunk.end(), i);
    return static_cast<int64_t>(it - first_chunk.begin()) - 1;
  }
  void chunk(int64_t i, int64_t n, int64_t* row0, int64_t* rows) const {
    if (!p.seq_offsets) {
      const int64_t b = i / per_batch(), c = i % per_batch();
      *row0 = b * p.T + c * p.chunk;
      *rows = std::min(p.chunk, p.T - c * p.chunk);
      return;
    }
    const int64_t c = i - first_chunk[n];
    *row0 = off(n) + c * p.chunk;
    *rows = std::min(p.chunk, len(n) - c * p.chunk);
  }
};

// v widened to double (exact; the 16-bit types through the fast float decoders).
template <class T>
double widen(T v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return static_cast<double>(to_float(v));
}

// x rounded once to U. A 16-bit U goes through float by round-to-odd (x's float neighbour towards
// zero, its last bit set when inexact; Boldo & Melquiond 2008): float has at least 2 more bits
// than U, so float -> U rounding to nearest even then gives the correctly rounded result, the
// bits of from_double<U>(x) without its slow generic path.
template <class U>
U narrow(double x) {
  if constexpr (std::is_same_v<U, double> || std::is_same_v<U, float>) {
    return static_cast<U>(x);
  } else {
    float f = static_cast<float>(x);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    // One step towards zero when f rounded away from it (inf becomes the largest float), then
    // the sticky last bit when inexact; a NaN stays a NaN. No branches: the loop vectorises.
    bits -= static_cast<uint32_t>(std::fabs(static_cast<double>(f)) > std::fabs(x));
    bits |= static_cast<uint32_t>(static_cast<double>(f) != x);
    std::memcpy(&f, &bits, sizeof f);
    return from_float<U>(f);
  }
}

template <class T, class U>
void cumsum(const Params& p, const ChunkMap& map, int threads) {
  const T* in = static_cast<const T*>(p.in);
  U* out = static_cast<U*>(p.out);
  const double scale = p.scale;
  const int64_t blocks = (p.C + kCols - 1) / kCols;
  const int64_t items = map.count() * blocks;
  const int64_t work = std::max<int64_t>(1, std::min(p.chunk, p.T) * std::min(kCols, p.C));
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / work);
  core::parallel_for(items, grain, threads, [&](int64_t begin, int64_t end) {
    double acc[kCols];
    int64_t n = p.seq_offsets ? map.seq_of(begin / blocks) : 0;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / blocks, c0 = (item % blocks) * kCols;
      const int64_t cols = std::min(kCols, p.C - c0);
      if (p.seq_offsets)
        while (map.first_chunk[n + 1] <= i) ++n;  // the next non-empty sequence
      int64_t row0, rows;
      map.chunk(i, n, &row0, &rows);
      std::fill(acc, acc + cols, 0.0);
      for (int64_t k = 0; k < rows; ++k) {
        const int64_t row = p.reverse ? row0 + rows - 1 - k : row0 + k;
        const T* src = in + row * p.C + c0;
        U* dst = out + row * p.C + c0;
        for (int64_t j = 0; j < cols; ++j) {
          acc[j] += widen(src[j]);
          dst[j] = narrow<U>(scale * acc[j]);
        }
      }
    }
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  const ChunkMap map(p);
  bool ok = false;
  visit_floating(p.in_dtype, [&](auto t) {
    ok = visit_floating(p.out_dtype,
                        [&](auto u) { cumsum<decltype(t), decltype(u)>(p, map, ctx.num_threads); });
  });
  if (!ok)
    return Status(StatusCode::internal, "chunk_local_cumsum: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::chunk_local_cumsum_ns
