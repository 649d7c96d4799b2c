// jagged/concat_2d_jagged/reference.cpp: the golden: README.md's formula as plain loops, sample by
// sample, one element at a time (a copy: every dtype is moved bit for bit). The backward zeroes
// both gradients and scatters each out row back to the row it came from. Includes params.h and
// core only (not rowmap.h).
#include <cstring>
#include <vector>

#include "ops/jagged/concat_2d_jagged/impls.h"

namespace recops::ops::concat_2d_jagged_ns {
namespace {
int64_t offset(const Params& p, const Side& s, int64_t i) {
  if (p.offsets_int64) return static_cast<const int64_t*>(s.offsets)[i * s.offsets_stride];
  return static_cast<const int32_t*>(s.offsets)[i * s.offsets_stride];
}

// Sample b's first flattened row and length on side s (offsets were validated on the CPU).
void sample(const Params& p, const Side& s, int64_t b, int64_t* first, int64_t* len) {
  if (s.S >= 0) {
    *first = b * s.S;
    *len = s.S;
  } else {
    *first = offset(p, s, b);
    *len = offset(p, s, b + 1) - *first;
  }
}

// Element offset of flattened row r (sample b) of side s in its strided input.
int64_t elem(const Side& s, int64_t b, int64_t r) {
  if (s.S >= 0) return b * s.batch_stride + (r - b * s.S) * s.row_stride;
  return r * s.row_stride;
}

void copy_row(const Params& p, char* dst, const char* src) {
  for (int64_t d = 0; d < p.D; ++d)
    std::memcpy(dst + d * p.itemsize, src + d * p.itemsize, static_cast<size_t>(p.itemsize));
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  const int64_t w = p.itemsize;
  if (p.backward) {
    std::memset(p.a.grad, 0, static_cast<size_t>(p.a.rows * p.D * w));
    std::memset(p.b.grad, 0, static_cast<size_t>(p.b.rows * p.D * w));
  }
  int64_t out_row = 0;  // sample b's first out row: the running sum of its lengths
  for (int64_t b = 0; b < p.B; ++b) {
    int64_t fa, la, fb, lb;
    sample(p, p.a, b, &fa, &la);
    sample(p, p.b, b, &fb, &lb);
    // (side, row within the side's sample) of each out row of sample b, in order.
    std::vector<std::pair<int, int64_t>> src;
    if (p.is_replace) {
      const int64_t r = la < lb ? la : lb;
      for (int64_t i = 0; i < la - r; ++i) src.push_back({0, i});
      for (int64_t j = lb - r; j < lb; ++j) src.push_back({1, j});
    } else {
      const int64_t k = p.k < lb ? p.k : lb;
      for (int64_t j = 0; j < k; ++j) src.push_back({1, j});
      for (int64_t i = 0; i < la; ++i) src.push_back({0, i});
      for (int64_t j = k; j < lb; ++j) src.push_back({1, j});
    }
    for (const auto& [side, i] : src) {
      const Side& s = side == 0 ? p.a : p.b;
      const int64_t row = (side == 0 ? fa : fb) + i;
      if (!p.backward) {
        copy_row(p, static_cast<char*>(p.out) + out_row * p.D * w,
                 static_cast<const char*>(s.data) + elem(s, b, row) * w);
      } else {
        copy_row(p, static_cast<char*>(s.grad) + row * p.D * w,
                 static_cast<const char*>(p.grad) + out_row * p.grad_row_stride * w);
      }
      ++out_row;
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops::concat_2d_jagged_ns
