// ops/jagged/common/cpu_io.h: what the jagged CPU paths (the jagged matmuls, jagged2 bmm,
// jagged_softmax, jagged_dense_flash_attention) share: the load of an element into the
// accumulator type, the store back, and cpu_generic's dtype switch.
#pragma once

#include <string>
#include <type_traits>

#include "ops/jagged/common/cpu_half.h"
#include "recops/dtype.h"
#include "recops/isa_ns.h"
#include "recops/status.h"

namespace recops::ops::jagged_cpu {
// The ISA-named inline namespace (recops/isa_ns.h): *_avx2.cpp files include this header too.
inline namespace RECOPS_ISA_NS {

// One element as Acc: fp16 and bf16 widen exactly to float (fp16 through common/cpu_half.h),
// float and double are cast.
template <class Acc, class T>
Acc load(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return cpu_half_to_float(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return to_float(v);
  else
    return static_cast<Acc>(v);
}

// An accumulator back to T: fp16 in one rounding, bf16 through cpu_bf16_from_float (both
// common/cpu_half.h), float and double cast.
template <class T, class Acc>
T store(Acc v) {
  if constexpr (std::is_same_v<T, Half>)
    return cpu_half_from(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return cpu_bf16_from_float(v);
  else
    return static_cast<T>(v);
}

// cpu_generic's dtype switch: f(T{}, Acc{}) with (T, Acc) = (double, double), (float, float),
// (Half, float) or (BFloat16, float); another dtype is an internal error naming `what`.
template <class F>
Status by_dtype(DType dtype, const char* what, F&& f) {
  switch (dtype) {
    case DType::fp64: f(double{}, double{}); break;
    case DType::fp32: f(float{}, float{}); break;
    case DType::fp16: f(Half{}, float{}); break;
    case DType::bf16: f(BFloat16{}, float{}); break;
    default:
      return Status(StatusCode::internal,
                    std::string(what) + ": cpu_generic reached with a bad dtype");
  }
  return Status::Ok();
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::ops::jagged_cpu
