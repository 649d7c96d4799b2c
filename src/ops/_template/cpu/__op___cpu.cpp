// __family__/__op__/cpu/__op___cpu.cpp: the optimized CPU path: fp32 arithmetic (fp64 for fp64),
// OpenMP over contiguous chunks, a plain loop the compiler vectorises.
#include <type_traits>

#include "core/parallel.h"
#include "ops/__family__/__op__/impls.h"

namespace recops::ops::__op___ns {
namespace {
// Acc: float for the 16-bit dtypes and fp32, double for fp64.
template <class T>
void scale(const Params& p, int threads) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  const Acc f = static_cast<Acc>(p.factor);
  core::parallel_for(p.N, int64_t{1} << 14, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if constexpr (std::is_same_v<T, double>)
        out[i] = f * x[i];
      else
        out[i] = from_float<T>(f * to_float(x[i]));
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) { scale<decltype(t)>(p, ctx.num_threads); }))
    return Status(StatusCode::internal, "__op__: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::__op___ns
