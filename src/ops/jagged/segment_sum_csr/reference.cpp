// jagged/segment_sum_csr/reference.cpp: the golden (accuracy.md): each segment summed in fp64
// (integers: modulo 2^64), rounded once to the dtype. Includes params.h, core and the
// goldens-only common/golden_offsets.h; shares no code with cpu/ or cuda/.
#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/segment_sum_csr/impls.h"

namespace recops::ops::segment_sum_csr_ns {
namespace {
int64_t seg_begin(const Params& p, int64_t i) {
  return golden_offset(p.csr_seg, p.csr_int64, p.csr_stride, i) * p.batch_size;
}

template <class T>
void sum_floating(const Params& p) {
  const T* v = static_cast<const T*>(p.values);
  T* out = static_cast<T*>(p.out);
  for (int64_t i = 0; i < p.S; ++i) {
    double s = 0;
    for (int64_t j = seg_begin(p, i); j < seg_begin(p, i + 1); ++j) s += to_double(v[j]);
    out[i] = from_double<T>(s);
  }
}

template <class I>
void sum_integer(const Params& p) {
  const I* v = static_cast<const I*>(p.values);
  I* out = static_cast<I*>(p.out);
  for (int64_t i = 0; i < p.S; ++i) {
    uint64_t s = 0;
    for (int64_t j = seg_begin(p, i); j < seg_begin(p, i + 1); ++j)
      s += static_cast<uint64_t>(static_cast<int64_t>(v[j]));
    out[i] = static_cast<I>(s);  // two's complement wrap to the output's width
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.dtype == DType::int32)
    sum_integer<int32_t>(p);
  else if (p.dtype == DType::int64)
    sum_integer<int64_t>(p);
  else if (!visit_floating(p.dtype, [&](auto t) { sum_floating<decltype(t)>(p); }))
    return Status(StatusCode::internal, "segment_sum_csr: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::segment_sum_csr_ns
