// torch/kit_cuda.cpp: the CUDA kernel of every kit op: the device guard and torch's current stream
// on the outputs' device, then the shared body (kit.cpp). Compiled only when the core has CUDA.
#include <torch/library.h>

#include "torch/cuda_context.h"
#include "torch/kit_body.h"

namespace recops::binding {
namespace {
class CudaKernel final : public c10::OperatorKernel {
 public:
  explicit CudaKernel(const kit::OpDef* d) : d_(d) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const size_t n = d_->args.size();
    const Args in(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
    const at::Tensor& t = device_tensor(*d_, in);
    const c10::cuda::CUDAGuard guard(t.device());
    run_boxed(*d_, stack, cuda_context(t), /*meta=*/false);
  }

 private:
  const kit::OpDef* d_;
};
}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, CUDA, m) {
  for (const auto& d : recops::kit::registry().defs)
    m.impl(d.name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                               std::make_unique<recops::binding::CudaKernel>(&d)));
}
