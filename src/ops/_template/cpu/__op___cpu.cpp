// __family__/__op__/cpu/__op___cpu.cpp: the optimized CPU path: fp32 arithmetic (fp64 for fp64),
// OpenMP over contiguous chunks, a plain loop the compiler vectorises.
#include "core/parallel.h"
#include "ops/__family__/__op__/impls.h"

namespace recops::ops::__op___ns {
namespace {
template <class T, class Acc>
void scale(const Params& p, int threads) {
  const T* x = static_cast<const T*>(p.x);
  T* out = static_cast<T*>(p.out);
  const Acc f = static_cast<Acc>(p.factor);
  core::parallel_for(p.N, int64_t{1} << 14, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if constexpr (std::is_same_v<T, Half>)
        out[i] = half_from_double(f * to_float(x[i]));
      else if constexpr (std::is_same_v<T, BFloat16>)
        out[i] = bf16_from_float(f * to_float(x[i]));
      else
        out[i] = static_cast<T>(f * x[i]);
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp64: scale<double, double>(p, ctx.num_threads); break;
    case DType::fp32: scale<float, float>(p, ctx.num_threads); break;
    case DType::fp16: scale<Half, float>(p, ctx.num_threads); break;
    case DType::bf16: scale<BFloat16, float>(p, ctx.num_threads); break;
    default: return Status(StatusCode::internal, "__op__: cpu_generic reached with a bad dtype");
  }
  return Status::Ok();
}

}  // namespace recops::ops::__op___ns
