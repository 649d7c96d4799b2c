// __family__/__op__/reference.cpp: the golden (accuracy.md): the formula in fp64, one element at
// a time, rounded once to the output dtype. Includes params.h and core only.
#include "ops/__family__/__op__/impls.h"

namespace recops::ops::__op___ns {
namespace {
template <class T>
void scale(const Params& p) {
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  for (int64_t i = 0; i < p.N; ++i) out[i] = from_double<T>(p.factor * to_double(x[i]));
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { scale<decltype(t)>(p); }))
    return Status(StatusCode::internal, "__op__: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::__op___ns
