// training/inplace_rope/reference.cpp: the golden (accuracy.md): the card's formula (§3.9) in
// fp64, one pair at a time, each output rounded once to the dtype. Includes params.h and core only.
#include "ops/training/inplace_rope/impls.h"

namespace recops::ops::inplace_rope_ns {
namespace {
template <class T, class C>
void golden(const Params& p) {
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  const C* cs = static_cast<const C*>(p.cos);
  const C* sn = static_cast<const C*>(p.sin);
  const int64_t first = p.Dh - 2 * p.half;  // the rope slice's first channel
  const double sigma = p.sign;
  for (int64_t b = 0; b < p.B; ++b) {
    for (int64_t l = 0; l < p.L; ++l) {
      for (int64_t h = 0; h < p.H; ++h) {
        const int64_t in = b * p.src_sb + l * p.src_sl + h * p.src_sh;
        const int64_t out = b * p.dst_sb + l * p.dst_sl + h * p.dst_sh;
        if (p.copy_nope)
          for (int64_t c = 0; c < first; ++c) dst[out + c] = src[in + c];
        for (int64_t i = 0; i < p.half; ++i) {
          const double c = to_double(cs[b * p.cs_sb + l * p.cs_sl + i]);
          const double s = to_double(sn[b * p.sn_sb + l * p.sn_sl + i]);
          const int64_t c0 = first + 2 * i, c1 = c0 + 1;
          // Both read before either is written: src and dst are the same memory in place.
          const double x0 = to_double(src[in + c0]);
          const double x1 = to_double(src[in + c1]);
          dst[out + c0] = from_double<T>(x0 * c - sigma * x1 * s);
          dst[out + c1] = from_double<T>(x1 * c + sigma * x0 * s);
        }
      }
    }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  bool ok = false;
  visit_floating(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (p.cs_dtype == DType::fp32) {
      golden<T, float>(p);
      ok = true;
    } else if (p.cs_dtype == p.dtype) {
      golden<T, T>(p);
      ok = true;
    }
  });
  if (!ok) return Status(StatusCode::internal, "inplace_rope_: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::inplace_rope_ns
