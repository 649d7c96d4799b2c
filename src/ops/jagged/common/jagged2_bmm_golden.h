// ops/jagged/common/jagged2_bmm_golden.h: goldens-only helper of the jagged² matmuls'
// references (array_jagged_bmm_jagged_out/reference.cpp, jagged_jagged_bmm_jagged_out/
// reference.cpp); the CPU and CUDA paths never include it.
#pragma once

#include <string>
#include <type_traits>

#include "ops/jagged/common/jagged2_bmm.h"

namespace recops::ops::j2bmm {

// f(T{}, Acc{}) with T the dtype's type and Acc double (the golden) or, with p.plain and T not
// double, float (the plain baseline); an internal error naming `op` for a non-floating dtype.
template <class F>
Status golden_dispatch(const Params& p, const char* op, F&& f) {
  const bool ok = visit_floating(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (p.plain && !std::is_same_v<T, double>)
      f(t, float{});
    else
      f(t, double{});
  });
  if (!ok)
    return Status(StatusCode::internal, std::string(op) + ": reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::j2bmm
