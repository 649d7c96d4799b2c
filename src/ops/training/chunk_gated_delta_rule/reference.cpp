// training/chunk_gated_delta_rule/reference.cpp: the golden (accuracy.md): training_ops.md §4.2's
// token-by-token recurrence in fp64, unchunked, forward and backward, with one gate per token and
// value head, g [B, T, HV] (training/common/gdn_composed_golden.h, which it shares with chunk_kda's
// golden and no cpu/ or cuda/ path includes).
#include "ops/training/chunk_gated_delta_rule/impls.h"
#include "ops/training/common/gdn_composed_golden.h"

namespace recops::ops::chunk_gated_delta_rule_ns {

Status run_reference(const Params& p, const Context&) {
  return training::golden::composed(p, /*per_channel=*/false);
}

}  // namespace recops::ops::chunk_gated_delta_rule_ns
