// training/sort_chunks_by_idx/binding.cpp: the torch hooks the generic binding (src/torch/kit.h)
// cannot derive:
//   save:     split_sizes, sorted_idx and whether probs were given (the spec's "Saves"; input
//             and probs are not kept);
//   backward: sort_chunks_by_idx_bwd(grad_output, split_sizes, sorted_idx, grad_probs or None),
//             whose schema (spec §3.8) is not the kit's default backward argument list;
//   meta:     both ops' outputs in SymInts (the optional probs output has no argument to be
//             `out_like` when probs is None).
#include <ATen/ops/empty.h>

#include "torch/kit.h"

namespace {
using recops::binding::Args;
constexpr const char* kSortChunksByIdx = "sort_chunks_by_idx";

std::vector<at::Tensor> like_meta(const Args& a, const char* op, const char* data,
                                  const char* probs) {
  const at::Tensor& x = recops::binding::arg(a, op, data).toTensor();
  const c10::IValue& p = recops::binding::arg(a, op, probs);
  const bool has = p.isTensor() && p.toTensor().defined();
  return {at::empty_symint(x.sym_sizes(), x.options()),
          has ? at::empty_symint(p.toTensor().sym_sizes(), p.toTensor().options())
              : at::empty({0}, x.options().dtype(at::kFloat))};
}
}  // namespace

RECOPS_TORCH_HOOKS(sort_chunks_by_idx) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) { return like_meta(a, kSortChunksByIdx, "input", "probs"); };
  h.save = [](const Args& a) -> Args {
    const c10::IValue& p = recops::binding::arg(a, kSortChunksByIdx, "probs");
    return {recops::binding::arg(a, kSortChunksByIdx, "split_sizes"),
            recops::binding::arg(a, kSortChunksByIdx, "sorted_idx"),
            c10::IValue(p.isTensor() && p.toTensor().defined())};
  };
  h.backward = [](const Args& saved, const std::vector<at::Tensor>& grads) {
    const c10::IValue gp = saved[2].toBool() ? c10::IValue(grads[1]) : c10::IValue();
    return recops::binding::call("sort_chunks_by_idx_bwd", {grads[0], saved[0], saved[1], gp});
  };
  return h;
}

RECOPS_TORCH_HOOKS(sort_chunks_by_idx_bwd) {
  recops::binding::TorchHooks h;
  h.meta = [](const Args& a) {
    return like_meta(a, "sort_chunks_by_idx_bwd", "grad_output", "grad_probs");
  };
  return h;
}
