// ops/jagged/common/two_parts_binding.h: torch code the two-part ops' binding.cpp files share
// (concat_1d_jagged, concat_2d_jagged; built into librecops_torch only). Their backward reads
// only the shapes of values_a and values_b, so autograd keeps a stand-in of each (its sizes, no
// data of its own) instead of the input.
#pragma once

#include "torch/kit.h"

namespace recops::ops {

// The arguments `a` of op `op` with values_a and values_b replaced by standin(values).
inline binding::Args keep_part_standins(const binding::Args& a, const char* op,
                                        at::Tensor (*standin)(const at::Tensor&)) {
  binding::Args saved = a;
  for (const char* name : {"values_a", "values_b"}) {
    const c10::IValue& v = binding::arg(a, op, name);
    saved[static_cast<size_t>(&v - a.data())] = standin(v.toTensor());
  }
  return saved;
}

}  // namespace recops::ops
