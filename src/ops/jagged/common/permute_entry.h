// ops/jagged/common/permute_entry.h: the entry of permute_1D_sparse_data and
// permute_2D_sparse_data (permute_api.h): every check, the output sizes, the params and the
// dispatch, and the public functions, in permute_entry.cpp; the argument table below. Each op
// folder's entry defines its implementation list (the shared paths, then its own golden) and
// registers the op.
#pragma once

#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/jagged/common/permute_api.h"
#include "ops/jagged/common/permute_params.h"

namespace recops::ops {

struct PermuteOp {
  const char* name;
  bool two_d;  // lengths [T, B] (else [T], B = 1)
  const std::vector<core::Impl<PermuteParams>>& (*impls)();
};

// Defined by each op folder's entry.
const std::vector<core::Impl<PermuteParams>>& permute_1D_impls();
const std::vector<core::Impl<PermuteParams>>& permute_2D_impls();
extern const PermuteOp kPermute1D, kPermute2D;

// The Python wrapper's docstring: the op's own first paragraphs (`intro`), then the arguments,
// returns and errors both ops share.
std::string permute_doc(const PermuteOp& op, const char* intro);

Status permute_shape(const PermuteOp& op, const PermuteSparseDataArgs& a, Shape* lengths_shape,
                     Shape* values_shape, const Context& ctx);
size_t permute_workspace(const PermuteOp& op, const PermuteSparseDataArgs& a);
Status permute_entry(const PermuteOp& op, const PermuteSparseDataArgs& a,
                     const TensorView& permuted_lengths, const TensorView& permuted_values,
                     const TensorView* permuted_weights, const Context& ctx);

// The argument table of op kOp (FBGEMM's schema): (permute, lengths, values, weights=None,
// permuted_lengths_sum=None) -> (permuted_lengths, permuted_values, permuted_weights); the last
// is an empty [0] tensor without weights. Forward only. Its fake kernel is the op folder's
// fake.py (with permuted_lengths_sum omitted the size is an unbacked SymInt, which only Python can
// create); with meta_helper, the table of the helper op _<op>_meta that fake.py calls:
// permuted_lengths_sum required, the Meta kernel from the folder's binding.cpp.
template <const PermuteOp& kOp>
kit::OpDef permute_def(const char* intro, bool meta_helper = false) {
  using Args = PermuteSparseDataArgs;
  const auto shapes = +[](const Args& a, std::vector<kit::OutSpec>* outs, const Context& ctx) {
    Shape ls, vs;
    RECOPS_RETURN_IF_ERROR(permute_shape(kOp, a, &ls, &vs, ctx));
    outs->push_back({ls, a.lengths.dtype});
    outs->push_back({vs, a.values.dtype});
    if (!a.weights) {
      outs->push_back({{0}, a.values.dtype, false});
      return Status::Ok();
    }
    Shape ws = a.weights->shape();
    ws[0] = vs[0];
    outs->push_back({ws, a.weights->dtype});
    return Status::Ok();
  };
  const auto run = +[](const Args& a, const kit::Outputs& o, const Context& ctx) {
    return permute_entry(kOp, a, o.views[0], o.views[1], o.get(2), ctx);
  };
  const auto workspace =
      +[](const Args& a, const kit::Outputs&) { return permute_workspace(kOp, a); };
  const char* none = meta_helper ? nullptr : "None";
  auto def =
      kit::Def<Args>(meta_helper ? "_" + std::string(kOp.name) + "_meta" : kOp.name, "jagged")
          .arg<&Args::permute>("permute")
          .arg<&Args::lengths>("lengths", {.dense_from = kOp.two_d ? 0 : -1})
          .arg<&Args::values>("values", {.dense_from = 1})
          .arg<&Args::weights>("weights", {.def = none, .dense_from = 1})
          .arg<&Args::permuted_lengths_sum>("permuted_lengths_sum", {.def = none, .sym = true})
          .out("permuted_lengths", false)
          .out("permuted_values", false)
          .out("permuted_weights", false)
          .device_arg(2)
          .shapes(shapes)
          .run(run)
          .workspace(workspace)
          .forward_only();
  if (meta_helper) return def.doc("-", "");
  return def.fake_in_python().doc("", permute_doc(kOp, intro));
}

}  // namespace recops::ops
