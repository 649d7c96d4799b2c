// jagged/jagged2_to_padded_dense/cpu/jagged2_to_padded_dense_cpu.cpp: the optimized CPU path.
// Forward: threads take output rows (b, m) in static chunks; a row is a copy of min(N_b, max_L)
// elements and a padding fill. Backward: threads take blocks b; a block row is a copy of the
// window's elements and a zero fill. Elements moved as unsigned integers of their size.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/parallel.h"
#include "ops/jagged/common/jagged2_blocks.h"
#include "ops/jagged/jagged2_to_padded_dense/impls.h"

namespace recops::ops::jagged2_to_padded_dense_ns {
namespace {
Jagged2Block block_of(const Params& p, int64_t b) {
  return jagged2_block_at(p.offsets, p.offsets_int64, p.offsets_stride, b, p.total);
}

template <class E>
void to_dense(const Params& p, int threads) {
  const E* v = static_cast<const E*>(p.src);
  E* out = static_cast<E*>(p.dst);
  E pad;
  std::memcpy(&pad, &p.padding_bits, sizeof(E));
  const int64_t rows = p.B * p.max_L;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, p.max_L));
  core::parallel_for(rows, grain, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / p.max_L, m = r - b * p.max_L;
      const Jagged2Block blk = block_of(p, b);
      const int64_t n = m < blk.side ? std::min(blk.side, p.max_L) : 0;
      E* row = out + r * p.max_L;
      const E* in = v + (blk.begin + m * blk.side) * p.jagged_stride;
      if (p.jagged_stride == 1) {
        for (int64_t c = 0; c < n; ++c) row[c] = in[c];
      } else {
        for (int64_t c = 0; c < n; ++c) row[c] = in[c * p.jagged_stride];
      }
      std::fill(row + n, row + p.max_L, pad);
    }
  });
}

template <class E>
void to_jagged(const Params& p, int threads) {
  const E* g = static_cast<const E*>(p.src);
  E* out = static_cast<E*>(p.dst);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, p.max_L));
  core::parallel_for(p.B, grain, threads, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const Jagged2Block blk = block_of(p, b);
      const int64_t N = blk.side, n = std::min(N, p.max_L);
      for (int64_t m = 0; m < N; ++m) {
        E* row = out + blk.begin + m * N;
        const int64_t k = m < n ? n : 0;
        const E* in = g + b * p.dense_b + m * p.dense_m;
        for (int64_t c = 0; c < k; ++c) row[c] = in[c];
        std::fill(row + k, row + N, E(0));
      }
    }
  });
}

template <class E>
void run(const Params& p, int threads) {
  if (p.backward) {
    to_jagged<E>(p, threads);
  } else {
    to_dense<E>(p, threads);
  }
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  switch (p.elem_size) {
    case 1: run<uint8_t>(p, ctx.num_threads); return Status::Ok();
    case 2: run<uint16_t>(p, ctx.num_threads); return Status::Ok();
    case 4: run<uint32_t>(p, ctx.num_threads); return Status::Ok();
    case 8: run<uint64_t>(p, ctx.num_threads); return Status::Ok();
    default:
      return Status(StatusCode::internal, "jagged2_to_padded_dense: cpu_generic: bad element size");
  }
}

}  // namespace recops::ops::jagged2_to_padded_dense_ns
