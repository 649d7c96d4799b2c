// jagged/jagged_dense_elementwise_add/reference.cpp: the golden (accuracy.md): the formula of
// jagged_ops.md §2.3 in fp64, element by element, rounded once to the dtype. Plain loops over
// (b, l, d); rows outside every sequence (only with invalid offsets, which the entry refuses on
// the CPU) are left alone.
#include <type_traits>

#include "ops/jagged/jagged_dense_elementwise_add/impls.h"

namespace recops::ops {
namespace {

double as_double(double v) {
  return v;
}
double as_double(float v) {
  return v;
}
double as_double(Half v) {
  return to_double(v);
}
double as_double(BFloat16 v) {
  return to_double(v);
}
template <class T>
T round_to(double v) {
  if constexpr (std::is_same_v<T, Half>)
    return half_from_double(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bf16_from_double(v);
  else
    return static_cast<T>(v);
}

int64_t offset_at(const JdEwParams& p, int64_t i) {
  const int64_t k = i * p.offsets_stride;
  return p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                         : static_cast<const int32_t*>(p.seq_offsets)[k];
}

template <class T>
void golden(const JdEwParams& p) {
  const T* x = static_cast<const T*>(p.a);
  const T* y = static_cast<const T*>(p.y);
  T* out = static_cast<T*>(p.out);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t start = offset_at(p, b);
    const int64_t length = offset_at(p, b + 1) - start;
    for (int64_t l = 0; l < length; ++l) {
      for (int64_t d = 0; d < p.D; ++d) {
        double v = as_double(x[(start + l) * p.a_row_stride + d]);
        if (l < p.S) v += as_double(y[b * p.y_batch_stride + l * p.y_row_stride + d]);
        out[(start + l) * p.D + d] = round_to<T>(v);
      }
    }
  }
}

}  // namespace

Status jagged_dense_elementwise_add_reference(const JdEwParams& p, const Context&) {
  switch (p.dtype) {
    case DType::fp64: golden<double>(p); break;
    case DType::fp32: golden<float>(p); break;
    case DType::fp16: golden<Half>(p); break;
    case DType::bf16: golden<BFloat16>(p); break;
    default:
      return Status(StatusCode::internal,
                    "jagged_dense_elementwise_add: reference reached with a bad dtype");
  }
  return Status::Ok();
}

}  // namespace recops::ops
