// jagged/concat_1d_jagged/reference.cpp: the golden: README.md's formula as plain loops, sample by
// sample, one element at a time (a copy: every dtype is moved bit for bit, so no fp64 arithmetic
// is involved). The output offsets are a running sum of the samples' lengths. The backward
// scatters each grad element to the part element it came from. Includes params.h, core and the
// family goldens' helper only.
#include <cstring>

#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/concat_1d_jagged/impls.h"

namespace recops::ops::concat_1d_jagged_ns {
namespace {
// Sample b of a part: its first flattened element and its length (offsets validated on the CPU).
void sample_of(const Params& p, const Part& part, int64_t b, int64_t* first, int64_t* len) {
  if (part.S < 0) {
    *first = golden_offset(part.offsets, p.offsets_int64, part.offsets_stride, b);
    *len = golden_offset(part.offsets, p.offsets_int64, part.offsets_stride, b + 1) - *first;
  } else {
    *first = b * part.S;
    *len = part.S;
  }
}

// Element offset (in elements) of element n of sample b in the part's strided input.
int64_t input_elem(const Part& part, int64_t b, int64_t first, int64_t n) {
  if (part.S < 0) return (first + n) * part.stride;
  return b * part.batch_stride + n * part.stride;
}

void copy_elem(const Params& p, void* dst, int64_t di, const void* src, int64_t si) {
  std::memcpy(static_cast<char*>(dst) + di * p.itemsize,
              static_cast<const char*>(src) + si * p.itemsize, static_cast<size_t>(p.itemsize));
}

void store_offset(const Params& p, int64_t b, int64_t v) {
  if (p.offsets_int64)
    static_cast<int64_t*>(p.out_offsets)[b] = v;
  else
    static_cast<int32_t*>(p.out_offsets)[b] = static_cast<int32_t>(v);
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  int64_t pos = 0;  // sample b's first output element
  if (!p.backward) store_offset(p, 0, 0);
  for (int64_t b = 0; b < p.B; ++b) {
    for (const Part* part : {&p.a, &p.b}) {
      int64_t first = 0, len = 0;
      sample_of(p, *part, b, &first, &len);
      for (int64_t n = 0; n < len; ++n, ++pos) {
        if (p.backward)
          copy_elem(p, part->grad, first + n, p.grad, pos * p.grad_stride);
        else
          copy_elem(p, p.out, pos, part->data, input_elem(*part, b, first, n));
      }
    }
    if (!p.backward) store_offset(p, b + 1, pos);
  }
  return Status::Ok();
}

}  // namespace recops::ops::concat_1d_jagged_ns
