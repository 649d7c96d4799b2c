// __family__/__op__/reference.cpp: the golden (accuracy.md): the formula in fp64, one element at
// a time, rounded once to the output dtype. Includes params.h and core only.
#include "ops/__family__/__op__/impls.h"

namespace recops::ops::__op___ns {
namespace {
double to_d(double v) {
  return v;
}
double to_d(float v) {
  return v;
}
double to_d(Half v) {
  return to_double(v);
}
double to_d(BFloat16 v) {
  return to_double(v);
}
template <class T>
T from_d(double v) {
  if constexpr (std::is_same_v<T, Half>)
    return half_from_double(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bf16_from_double(v);
  else
    return static_cast<T>(v);
}

template <class T>
void scale(const Params& p) {
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  for (int64_t i = 0; i < p.N; ++i) out[i] = from_d<T>(p.factor * to_d(x[i]));
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  switch (p.dtype) {
    case DType::fp64: scale<double>(p); break;
    case DType::fp32: scale<float>(p); break;
    case DType::fp16: scale<Half>(p); break;
    case DType::bf16: scale<BFloat16>(p); break;
    default: return Status(StatusCode::internal, "__op__: reference reached with a bad dtype");
  }
  return Status::Ok();
}

}  // namespace recops::ops::__op___ns
