// ops/jagged/common/jagged2_host.h: host-side content checks of jagged² offsets (jagged_ops.md
// §1.2, §4 row 4), shared by the jagged2_* entries. Contents are read always for CPU tensors and,
// for CUDA tensors, only under validation (one copy and a sync, never during graph capture).
#pragma once

#include <cstdint>
#include <string_view>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops {

// The offset rules of §1.2 with offsets[B] = total (`total_rule` names where total comes from),
// then every block size offsets[b+1] - offsets[b]: an exact square N_b² when `lengths` is null,
// else lengths[b]² with every lengths[b] >= 0 (`lengths` 1-D int32/int64 of B elements, checked
// by the caller).
Status jagged2_validate(std::string_view op, std::string_view off_arg, const TensorView& off,
                        int64_t total, std::string_view total_rule, const TensorView* lengths,
                        std::string_view len_arg, const Context& ctx);

}  // namespace recops::ops
