// training/common/gdn_cpu.h: the element access of the GDN/KDA sub-ops' CPU paths: one element of a
// floating tensor of runtime dtype widened to the arithmetic type S, and a value rounded once into
// one. Used where an item reads O(R·D) elements against O(R²·D) products, so a runtime switch per
// element costs nothing measurable. For cpu/ code only: no golden includes it (the goldens have
// their own gdn_golden.h), so a golden shares no code with the implementation it judges. Used by
// chunk_kda_bwd_dav and chunk_kda_bwd_intra; chunk_kda_fwd_intra, chunk_scaled_dot_kkt and
// recompute_w_u_fwd still carry their own copies.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::training::gdn_cpu {

// Element i of a floating tensor of dtype t (fp64, fp32, fp16 or bf16) as S.
template <class S>
S load_as(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<S>(static_cast<const double*>(base)[i]);
    case DType::fp32: return static_cast<S>(static_cast<const float*>(base)[i]);
    case DType::fp16: return static_cast<S>(to_float(static_cast<const Half*>(base)[i]));
    default: return static_cast<S>(to_float(static_cast<const BFloat16*>(base)[i]));
  }
}

// x rounded once into element i of a floating tensor of dtype t.
template <class S>
void store_as(void* base, DType t, int64_t i, S x) {
  switch (t) {
    case DType::fp64: static_cast<double*>(base)[i] = static_cast<double>(x); break;
    case DType::fp32: static_cast<float*>(base)[i] = static_cast<float>(x); break;
    case DType::fp16:
      static_cast<Half*>(base)[i] = from_double<Half>(static_cast<double>(x));
      break;
    default: static_cast<BFloat16*>(base)[i] = from_double<BFloat16>(static_cast<double>(x));
  }
}

}  // namespace recops::ops::training::gdn_cpu
