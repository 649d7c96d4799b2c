// jagged/keyed_jagged_index_select_dim1/reference.cpp: the golden (accuracy.md): plain loops over
// keys, selected positions and rows. Forward: element copies (bytes as they are). Backward: for
// each input row, the sum over every k in ascending order in fp64, rounded once. Shares no code
// with the CPU and CUDA paths it judges (common/select_*).
#include <cstring>
#include <vector>

#include "ops/jagged/keyed_jagged_index_select_dim1/impls.h"

namespace recops::ops::keyed_jagged_index_select_dim1_ns {
namespace {
int64_t int_at(const void* p, bool int64, int64_t stride, int64_t i) {
  return int64 ? static_cast<const int64_t*>(p)[i * stride]
               : static_cast<const int32_t*>(p)[i * stride];
}

// off[f*B + b]: the first row of input segment (f, b); pos[f*K + k]: of output segment (f, k).
struct Layout {
  std::vector<int64_t> off, pos, idx;
};

Layout layout(const SelectParams& p) {
  Layout t;
  t.off.assign(static_cast<size_t>(p.F * p.B + 1), 0);
  for (int64_t s = 0; s < p.F * p.B; ++s)
    t.off[s + 1] = t.off[s] + int_at(p.lengths, p.lengths_int64, p.lengths_stride, s);
  for (int64_t k = 0; k < p.K; ++k)
    t.idx.push_back(int_at(p.indices, p.indices_int64, p.indices_stride, k));
  t.pos.assign(static_cast<size_t>(p.F * p.K + 1), 0);
  for (int64_t f = 0; f < p.F; ++f)
    for (int64_t k = 0; k < p.K; ++k) {
      const int64_t s = f * p.B + t.idx[k];
      t.pos[f * p.K + k + 1] = t.pos[f * p.K + k] + (t.off[s + 1] - t.off[s]);
    }
  return t;
}

template <class T>
void backward(const SelectParams& p, const Layout& t) {
  const T* g = static_cast<const T*>(p.src);
  T* gv = static_cast<T*>(p.dst);
  for (int64_t f = 0; f < p.F; ++f)
    for (int64_t b = 0; b < p.B; ++b) {
      const int64_t s = f * p.B + b;
      for (int64_t l = 0; l < t.off[s + 1] - t.off[s]; ++l) {
        double sum = 0;
        for (int64_t k = 0; k < p.K; ++k)
          if (t.idx[k] == b) sum += to_double(g[(t.pos[f * p.K + k] + l) * p.src_row_stride]);
        gv[t.off[s] + l] = from_double<T>(sum);
      }
    }
}
}  // namespace

Status run_reference(const SelectParams& p, const Context&) {
  const Layout t = layout(p);
  if (p.backward) {
    if (!visit_floating(p.dtype, [&](auto v) { backward<decltype(v)>(p, t); }))
      return Status(StatusCode::internal, "keyed_jagged_index_select_dim1_bwd: reference: dtype");
    return Status::Ok();
  }
  const int64_t es = dtype_size(p.dtype);
  for (int64_t f = 0; f < p.F; ++f)
    for (int64_t k = 0; k < p.K; ++k) {
      const int64_t j = f * p.K + k, s = f * p.B + t.idx[k];
      const int64_t len = t.off[s + 1] - t.off[s];
      if (p.out_lengths != nullptr) {
        if (p.lengths_int64)
          static_cast<int64_t*>(p.out_lengths)[j] = len;
        else
          static_cast<int32_t*>(p.out_lengths)[j] = static_cast<int32_t>(len);
      }
      for (int64_t l = 0; l < len; ++l)
        std::memcpy(static_cast<char*>(p.dst) + (t.pos[j] + l) * es,
                    static_cast<const char*>(p.src) + (t.off[s] + l) * p.src_row_stride * es,
                    static_cast<size_t>(es));
    }
  return Status::Ok();
}

}  // namespace recops::ops::keyed_jagged_index_select_dim1_ns
