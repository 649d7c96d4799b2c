// jagged/jagged_index_select/reference.cpp: the golden (accuracy.md): plain loops over sequences.
// Forward: element copies (any dtype, bytes as they are). Backward: for each input row, the sum
// over every k in ascending order in fp64, rounded once. Shares no code with the CPU and CUDA
// paths it judges (common/select_*); one key only (F = 1, as the entry sets).
#include <cstring>
#include <vector>

#include "ops/jagged/jagged_index_select/impls.h"

namespace recops::ops::jagged_index_select_ns {
namespace {
int64_t int_at(const void* p, bool int64, int64_t stride, int64_t i) {
  return int64 ? static_cast<const int64_t*>(p)[i * stride]
               : static_cast<const int32_t*>(p)[i * stride];
}

template <class T>
void backward(const SelectParams& p, const std::vector<int64_t>& in_off,
              const std::vector<int64_t>& out_off, const std::vector<int64_t>& idx) {
  const T* g = static_cast<const T*>(p.src);
  T* gv = static_cast<T*>(p.dst);
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t l = 0; l < in_off[b + 1] - in_off[b]; ++l)
      for (int64_t d = 0; d < p.D; ++d) {
        double s = 0;
        for (int64_t k = 0; k < p.K; ++k)
          if (idx[k] == b) s += to_double(g[(out_off[k] + l) * p.src_row_stride + d]);
        gv[(in_off[b] + l) * p.D + d] = from_double<T>(s);
      }
}
}  // namespace

Status run_reference(const SelectParams& p, const Context&) {
  std::vector<int64_t> in_off(p.B + 1, 0), out_off(p.K + 1, 0), idx(p.K);
  for (int64_t b = 0; b < p.B; ++b)
    in_off[b + 1] = in_off[b] + int_at(p.lengths, p.lengths_int64, p.lengths_stride, b);
  for (int64_t k = 0; k < p.K; ++k) {
    idx[k] = int_at(p.indices, p.indices_int64, p.indices_stride, k);
    out_off[k + 1] = out_off[k] + (in_off[idx[k] + 1] - in_off[idx[k]]);
  }
  if (p.backward) {
    if (!visit_floating(p.dtype, [&](auto t) { backward<decltype(t)>(p, in_off, out_off, idx); }))
      return Status(StatusCode::internal, "jagged_index_select_bwd: reference: bad dtype");
    return Status::Ok();
  }
  const int64_t es = dtype_size(p.dtype);
  for (int64_t k = 0; k < p.K; ++k) {
    const int64_t len = out_off[k + 1] - out_off[k];
    if (p.lengths_int64)
      static_cast<int64_t*>(p.out_lengths)[k] = len;
    else
      static_cast<int32_t*>(p.out_lengths)[k] = static_cast<int32_t>(len);
    for (int64_t l = 0; l < len; ++l)
      for (int64_t d = 0; d < p.D; ++d)
        std::memcpy(
            static_cast<char*>(p.dst) + ((out_off[k] + l) * p.D + d) * es,
            static_cast<const char*>(p.src) + ((in_off[idx[k]] + l) * p.src_row_stride + d) * es,
            static_cast<size_t>(es));
  }
  return Status::Ok();
}

}  // namespace recops::ops::jagged_index_select_ns
