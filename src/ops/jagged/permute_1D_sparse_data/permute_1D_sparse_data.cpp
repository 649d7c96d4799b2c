// jagged/permute_1D_sparse_data/permute_1D_sparse_data.cpp: the op's implementation list (the
// family's permute paths, then its golden) and its registration (OpInfo, argument table). The
// checks, params, dispatch and public functions are the family's permute entry
// (common/permute_entry.cpp), with lengths [T] (B = 1).
#include "ops/jagged/permute_1D_sparse_data/permute_1D_sparse_data.h"

#include "ops/jagged/common/permute_entry.h"
#include "ops/jagged/permute_1D_sparse_data/impls.h"

namespace recops::ops {

const std::vector<core::Impl<PermuteParams>>& permute_1D_impls() {
  static const auto list = core::standard_impls<PermuteParams>(
      RECOPS_IF_CUDA(permute_run_cuda), permute_run_cpu, permute_1D_sparse_data_ns::run_reference);
  return list;
}

}  // namespace recops::ops

namespace {
constexpr const char* kIntro = R"(Permutes the segments of a 1-D jagged tensor (FBGEMM's form).

Output segment ``i`` is input segment ``permute[i]``: ``permuted_lengths[i] =
lengths[permute[i]]``, its values (and weights) follow. ``permute`` may repeat segments or leave
some out.
)";
}  // namespace

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  reg.add(OpInfo{ops::kPermute1D.name, "jagged", core::describe_impls(ops::permute_1D_impls())});
  reg.add(ops::permute_def<ops::kPermute1D>(kIntro));
  reg.add(ops::permute_def<ops::kPermute1D>(kIntro, /*meta_helper=*/true));
}
