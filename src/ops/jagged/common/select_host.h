// ops/jagged/common/select_host.h: host-side reads and content checks shared by the select ops
// (jagged_index_select, keyed_jagged_index_select_dim1): lengths and indices are read on the host
// always for CPU tensors and, for CUDA tensors, only under validation (one copy and a sync,
// never while the stream captures a graph), as jagged_ops.md §1.2 does for offsets.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops {

// A 1-D int32 or int64 tensor's values as int64 on the host. *read = false (and no error) when
// the tensor is on CUDA and validation is off or the stream is capturing (*out is then empty
// and nothing was allocated).
Status select_read_ints(const TensorView& t, const Context& ctx, std::vector<int64_t>* out,
                        bool* read);

// Every length >= 0; their sum (written to *sum) as int64, refusing an overflow.
Status select_check_lengths(std::string_view op, std::string_view arg,
                            const std::vector<int64_t>& lengths, int64_t* sum);

// Every index in [0, bound).
Status select_check_indices(std::string_view op, std::string_view arg,
                            const std::vector<int64_t>& indices, int64_t bound,
                            std::string_view bound_rule);

// Whether the host can read t's entries now: a CPU tensor with data, or one without entries (torch
// gives an empty tensor no storage, so its null pointer is no lack of data; a Meta view, which a
// shape function may see, has none).
bool select_host_readable(const TensorView& t);

// 1-D, int32 or int64 (the rank and dtype rules of lengths and indices).
Status select_check_int_1d(std::string_view op, std::string_view arg, const TensorView& t);

}  // namespace recops::ops
