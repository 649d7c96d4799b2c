// complete_cumsum family, CUDA kernels: device guard, current stream, then the shared body (which
// allocates the scan's workspace with torch's caching allocator on that stream).
#include <torch/library.h>

#include "torch/cuda_context.h"
#include "torch/ops/bodies.h"

namespace recops::binding {
namespace {
template <CumsumKind K>
at::Tensor cumsum_cuda(const at::Tensor& t, std::optional<at::ScalarType> out_dtype) {
  const c10::cuda::CUDAGuard guard(t.device());
  return run_cumsum(K, t, out_dtype, cuda_context(t));
}
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CUDA, m) {
  using recops::binding::cumsum_cuda;
  using recops::binding::CumsumKind;
  m.impl("complete_cumsum", TORCH_FN(cumsum_cuda<CumsumKind::complete>));
  m.impl("exclusive_cumsum", TORCH_FN(cumsum_cuda<CumsumKind::exclusive>));
  m.impl("inclusive_cumsum", TORCH_FN(cumsum_cuda<CumsumKind::inclusive>));
  m.impl("asynchronous_complete_cumsum", TORCH_FN(cumsum_cuda<CumsumKind::complete>));
  m.impl("asynchronous_exclusive_cumsum", TORCH_FN(cumsum_cuda<CumsumKind::exclusive>));
  m.impl("asynchronous_inclusive_cumsum", TORCH_FN(cumsum_cuda<CumsumKind::inclusive>));
}
