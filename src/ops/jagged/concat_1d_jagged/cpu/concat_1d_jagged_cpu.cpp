// jagged/concat_1d_jagged/cpu/concat_1d_jagged_cpu.cpp: the optimized CPU path. The output
// elements (forward: values; backward: grad) are cut into chunks of kChunk; each chunk finds the
// sample holding its first element by binary search of o_b = p_b + q_b and walks the samples on,
// moving each run of a part with one memcpy (stride 1) or a strided loop of the element width.
// Work is balanced by elements, so one huge sample among many short ones splits evenly.
#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "ops/jagged/concat_1d_jagged/impls.h"

namespace recops::ops::concat_1d_jagged_ns {
namespace {
constexpr int64_t kChunk = 16384;  // elements per work item (64 KiB of fp32)

// p_b of a part (b in [0, B]). The CPU entry validated the offsets, so they are in range.
int64_t start(const Params& p, const Part& part, int64_t b) {
  if (part.S >= 0) return b * part.S;
  const int64_t i = b * part.offsets_stride;
  return p.offsets_int64 ? static_cast<const int64_t*>(part.offsets)[i]
                         : static_cast<int64_t>(static_cast<const int32_t*>(part.offsets)[i]);
}

int64_t out_start(const Params& p, int64_t b) {
  return start(p, p.a, b) + start(p, p.b, b);
}

// n elements of width W: dst[k] = src[k * src_stride] (dst contiguous).
template <class W>
void gather(void* dst, const void* src, int64_t src_stride, int64_t n) {
  auto* d = static_cast<W*>(dst);
  const auto* s = static_cast<const W*>(src);
  for (int64_t k = 0; k < n; ++k) d[k] = s[k * src_stride];
}

void move_run(const Params& p, void* dst, const void* src, int64_t src_stride, int64_t n) {
  if (n <= 0) return;
  if (src_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n * p.itemsize));
    return;
  }
  switch (p.itemsize) {
    case 1: gather<uint8_t>(dst, src, src_stride, n); break;
    case 2: gather<uint16_t>(dst, src, src_stride, n); break;
    case 4: gather<uint32_t>(dst, src, src_stride, n); break;
    default: gather<uint64_t>(dst, src, src_stride, n); break;
  }
}

// Elements [n0, n0 + count) of sample b of `part`, which sit at output elements [e, e + count).
void move_part(const Params& p, const Part& part, int64_t b, int64_t first, int64_t n0,
               int64_t count, int64_t e) {
  const int64_t w = p.itemsize;
  if (!p.backward) {
    const int64_t src =
        part.S < 0 ? (first + n0) * part.stride : b * part.batch_stride + n0 * part.stride;
    move_run(p, static_cast<char*>(p.out) + e * w, static_cast<const char*>(part.data) + src * w,
             part.stride, count);
  } else {
    move_run(p, static_cast<char*>(part.grad) + (first + n0) * w,
             static_cast<const char*>(p.grad) + e * p.grad_stride * w, p.grad_stride, count);
  }
}

// Output elements [begin, end).
void run_chunk(const Params& p, int64_t begin, int64_t end) {
  int64_t lo = 0, hi = p.B - 1;  // the last sample whose first output element is <= begin
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (out_start(p, mid) <= begin)
      lo = mid;
    else
      hi = mid - 1;
  }
  int64_t e = begin;
  for (int64_t b = lo; b < p.B && e < end; ++b) {
    const int64_t pa = start(p, p.a, b), la = start(p, p.a, b + 1) - pa;
    const int64_t pb = start(p, p.b, b), lb = start(p, p.b, b + 1) - pb;
    const int64_t o = pa + pb;
    // Part A covers [o, o + la), part B [o + la, o + la + lb).
    if (e < o + la) {
      const int64_t n = e - o, count = std::min(end, o + la) - e;
      move_part(p, p.a, b, pa, n, count, e);
      e += count;
    }
    if (e < end && e < o + la + lb) {
      const int64_t n = e - o - la, count = std::min(end, o + la + lb) - e;
      move_part(p, p.b, b, pb, n, count, e);
      e += count;
    }
  }
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!p.backward) {
    core::parallel_for(p.B + 1, kChunk, ctx.num_threads, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t o = out_start(p, b);
        if (p.offsets_int64)
          static_cast<int64_t*>(p.out_offsets)[b] = o;
        else
          static_cast<int32_t*>(p.out_offsets)[b] = static_cast<int32_t>(o);
      }
    });
  }
  if (p.B == 0) return Status::Ok();
  const int64_t chunks = (p.total + kChunk - 1) / kChunk;
  core::parallel_for(chunks, 1, ctx.num_threads, [&](int64_t c0, int64_t c1) {
    run_chunk(p, c0 * kChunk, std::min(p.total, c1 * kChunk));
  });
  return Status::Ok();
}

}  // namespace recops::ops::concat_1d_jagged_ns
