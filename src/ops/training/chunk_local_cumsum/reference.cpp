// training/chunk_local_cumsum/reference.cpp: the golden (accuracy.md): training_ops.md §4.3's
// formula in fp64, one output element at a time, each sum taken afresh from its chunk's first (or
// last) position and rounded once to the output dtype. Includes params.h and core only; shares no
// code with cpu/.
#include "ops/training/chunk_local_cumsum/impls.h"

namespace recops::ops::chunk_local_cumsum_ns {
namespace {

int64_t offset_value(const Params& p, int64_t n) {
  return p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[n]
                                     : static_cast<const int64_t*>(p.seq_offsets)[n];
}

// in: T, out: U (the C++ types of the dtypes).
template <class T, class U>
void golden(const Params& p) {
  const T* in = static_cast<const T*>(p.in);
  U* out = static_cast<U*>(p.out);
  for (int64_t n = 0; n < p.N; ++n) {
    // Sequence n: rows [first, last) of batch row b.
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p, n + 1) : p.T;
    for (int64_t t = first; t < last; ++t) {
      // The chunk of row t: [lo, hi), counted from the sequence's first row.
      const int64_t lo = first + (t - first) / p.chunk * p.chunk;
      const int64_t hi = last - lo > p.chunk ? lo + p.chunk : last;
      const int64_t from = p.reverse ? t : lo;
      const int64_t to = p.reverse ? hi - 1 : t;
      for (int64_t c = 0; c < p.C; ++c) {
        double sum = 0.0;
        for (int64_t s = from; s <= to; ++s) sum += to_double(in[(b * p.T + s) * p.C + c]);
        out[(b * p.T + t) * p.C + c] = from_double<U>(p.scale * sum);
      }
    }
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  bool ok = false;
  visit_floating(p.in_dtype, [&](auto t) {
    ok = visit_floating(p.out_dtype, [&](auto u) { golden<decltype(t), decltype(u)>(p); });
  });
  if (!ok)
    return Status(StatusCode::internal, "chunk_local_cumsum: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::chunk_local_cumsum_ns
