// jagged/permute_2D_sparse_data/permute_2D_sparse_data.cpp: the op's implementation list (the
// family's permute paths, then its golden) and its registration (OpInfo, argument table). The
// checks, params, dispatch and public functions are the family's permute entry
// (common/permute_entry.cpp), with lengths [T, B].
#include "ops/jagged/permute_2D_sparse_data/permute_2D_sparse_data.h"

#include "ops/jagged/common/permute_entry.h"
#include "ops/jagged/permute_2D_sparse_data/impls.h"

namespace recops::ops {

const std::vector<core::Impl<PermuteParams>>& permute_2D_impls() {
  static const auto list = core::standard_impls<PermuteParams>(
      RECOPS_IF_CUDA(permute_run_cuda), permute_run_cpu, permute_2D_sparse_data_ns::run_reference);
  return list;
}

}  // namespace recops::ops

namespace {
constexpr const char* kIntro =
    R"(Permutes whole feature rows of a 2-D jagged tensor (FBGEMM's form).

``lengths [T, B]`` holds B segments per feature row, back to back in row-major order. Output row
``i`` is input row ``permute[i]``: ``permuted_lengths[i, b] = lengths[permute[i], b]``, and the
values (and weights) of its B segments follow. ``permute`` may repeat rows or leave some out.
)";
}  // namespace

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  reg.add(OpInfo{ops::kPermute2D.name, "jagged", core::describe_impls(ops::permute_2D_impls())});
  reg.add(ops::permute_def<ops::kPermute2D>(kIntro));
  reg.add(ops::permute_def<ops::kPermute2D>(kIntro, /*meta_helper=*/true));
}
