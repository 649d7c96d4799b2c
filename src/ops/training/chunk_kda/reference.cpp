// training/chunk_kda/reference.cpp: the golden (accuracy.md): training_ops.md §4.5's
// token-by-token recurrence in fp64, unchunked, forward and backward, with the per-channel gate g
// [B, T, HV, K] (training/common/gdn_composed_golden.h, which it shares with
// chunk_gated_delta_rule's golden and no cpu/ or cuda/ path includes).
#include "ops/training/chunk_kda/impls.h"
#include "ops/training/common/gdn_composed_golden.h"

namespace recops::ops::chunk_kda_ns {

Status run_reference(const Params& p, const Context&) {
  return training::golden::composed(p, /*per_channel=*/true);
}

}  // namespace recops::ops::chunk_kda_ns
