// Stem family (stem_indexer.md), Autograd kernels. The ops are forward-only (the spec defines no
// gradients: a prefill path). Without an Autograd kernel PyTorch would let a backward pass run
// through them and silently drop their inputs' gradients, so a call with grad mode on and a
// floating input that requires grad raises instead, naming the op and the argument; otherwise the
// call goes on to the backend kernel.
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include <string>

namespace recops::binding {
namespace {

void forward_only(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  if (at::GradMode::is_enabled()) {
    const size_t first = stack->size() - args.size();
    for (size_t i = 0; i < args.size(); ++i) {
      const c10::IValue& v = (*stack)[first + i];
      if (v.isTensor() && v.toTensor().defined() && v.toTensor().requires_grad()) {
        std::string name = op.schema().name();
        if (name.rfind("recops::", 0) == 0) name = name.substr(8);
        TORCH_CHECK(false, "recops.", name, ": argument '", args[i].name(),
                    "' requires grad, but the op is not differentiable (forward-only, as "
                    "stem_indexer.md defines it); detach the inputs or run under torch.no_grad()");
      }
    }
  }
  at::AutoDispatchBelowADInplaceOrView guard;
  op.callBoxed(stack);
}

}  // namespace
}  // namespace recops::binding

TORCH_LIBRARY_IMPL(recops, Autograd, m) {
  for (const char* name :
       {"stem_prepare", "stem_indexer", "stem_indexer_metadata", "block_sparse_attention"})
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&recops::binding::forward_only>());
}
