// stem/common/stem_binding.h: the torch extras of the Stem family that every op folder's
// binding.cpp shares (torch-side; the generic binding, src/torch/kit.h, does the rest: schema,
// CPU/CUDA/Meta bodies, Python wrappers). RECOPS_STEM_TORCH_RULES(op) registers the two rules of
// stem_indexer.md that the generic binding does not have:
//
//   errors (spec §10): a failed Status raises TypeError when its reason says "must have dtype",
//     ValueError otherwise (NotImplementedError stays); the generic body raises RuntimeError for
//     both. A BackendSelect kernel, which runs ahead of the backend kernels for every call (also
//     under inference_mode and for Meta/Fake tensors), retypes them. Errors of the conversion
//     itself ("<op>: <arg> has dtype Short, which recops does not support ...") stay
//     RuntimeError, as they were.
//   forward-only: the ops have no gradient. With grad mode on, an input that requires grad is an
//     error naming the argument, instead of outputs that silently drop its gradient. Kernels for
//     AutogradCPU/AutogradCUDA/AutogradMeta (a runtime key's own kernel takes precedence over the
//     generic Autograd one) refuse, then go on below autograd.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/stack.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>
#include <typeinfo>

#include "torch/kit.h"

namespace recops::binding::stem {

// The argument `name` of a hook's arguments (found in the op's table, not by position).
inline const c10::IValue& arg(const Args& a, const char* op, const char* name) {
  const kit::OpDef* d = kit::find_def(op);
  TORCH_INTERNAL_ASSERT(d != nullptr, op, " is not in the kit's registry");
  size_t i = 0;
  while (i < d->args.size() && d->args[i].name != name) ++i;
  TORCH_INTERNAL_ASSERT(i < d->args.size() && i < a.size(), op, " has no argument ", name);
  return a[i];
}

// BackendSelect: the Status rule of spec §10 on the errors of the backend kernel.
class TypedErrors final : public c10::OperatorKernel {
 public:
  explicit TypedErrors(const char* op) : prefix_(std::string(op) + ": ") {}
  void operator()(const c10::OperatorHandle& h, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    try {
      h.redispatchBoxed(ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER,
                                                 c10::DispatchKey::BackendSelect),
                        stack);
    } catch (const c10::Error& e) {
      // Typed errors (NotImplementedError, TypeError, ValueError, out of memory, ...) and the
      // conversion's own errors pass as they are; the rest come from a Status.
      if (typeid(e) != typeid(c10::Error) || e.msg().rfind(prefix_, 0) == 0) throw;
      if (e.msg().find("must have dtype") != std::string::npos) TORCH_CHECK_TYPE(false, e.msg());
      TORCH_CHECK_VALUE(false, e.msg());
    }
  }

 private:
  std::string prefix_;
};

// AutogradCPU/CUDA/Meta: refuses inputs that require grad, then runs the op below autograd.
class ForwardOnly final : public c10::OperatorKernel {
 public:
  void operator()(const c10::OperatorHandle& h, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    const auto& args = h.schema().arguments();
    if (at::GradMode::is_enabled()) {
      const size_t first = stack->size() - args.size();
      for (size_t i = 0; i < args.size(); ++i) {
        const c10::IValue& v = (*stack)[first + i];
        if (v.isTensor() && v.toTensor().defined() && v.toTensor().requires_grad()) {
          std::string name = h.schema().name();
          if (name.rfind("recops::", 0) == 0) name = name.substr(8);
          TORCH_CHECK(false, "recops.", name, ": argument '", args[i].name(),
                      "' requires grad, but the op is not differentiable (forward-only, as "
                      "stem_indexer.md defines it); detach the inputs or run under "
                      "torch.no_grad()");
        }
      }
    }
    const at::AutoDispatchBelowADInplaceOrView below;
    h.redispatchBoxed(ks & c10::after_autograd_keyset, stack);
  }
};

inline torch::CppFunction typed_errors(const char* op) {
  return torch::CppFunction::makeFromBoxedFunctor(std::make_unique<TypedErrors>(op));
}
inline torch::CppFunction forward_only() {
  return torch::CppFunction::makeFromBoxedFunctor(std::make_unique<ForwardOnly>());
}

}  // namespace recops::binding::stem

#define RECOPS_STEM_TORCH_RULES(op)                          \
  TORCH_LIBRARY_IMPL(recops, BackendSelect, m) {             \
    m.impl(#op, ::recops::binding::stem::typed_errors(#op)); \
  }                                                          \
  TORCH_LIBRARY_IMPL(recops, AutogradCPU, m) {               \
    m.impl(#op, ::recops::binding::stem::forward_only());    \
  }                                                          \
  TORCH_LIBRARY_IMPL(recops, AutogradCUDA, m) {              \
    m.impl(#op, ::recops::binding::stem::forward_only());    \
  }                                                          \
  TORCH_LIBRARY_IMPL(recops, AutogradMeta, m) {              \
    m.impl(#op, ::recops::binding::stem::forward_only());    \
  }
