// ops/jagged/common/jagged2_host.cpp: see jagged2_host.h.
#include "ops/jagged/common/jagged2_host.h"

#include <vector>

#include "core/offsets.h"
#include "ops/jagged/common/jagged2_blocks.h"
#include "ops/jagged/common/select_host.h"

namespace recops::ops {

Status jagged2_validate(std::string_view op, std::string_view off_arg, const TensorView& off,
                        int64_t total, std::string_view total_rule, const TensorView* lengths,
                        std::string_view len_arg, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, off_arg, off, total, total_rule, ctx));
  std::vector<int64_t> o, len;
  bool read = false;
  RECOPS_RETURN_IF_ERROR(select_read_ints(off, ctx, &o, &read));
  if (!read) return Status::Ok();  // CUDA without validation: the kernels clamp
  if (lengths) {
    RECOPS_RETURN_IF_ERROR(select_read_ints(*lengths, ctx, &len, &read));
    if (!read) return Status::Ok();
  }
  for (size_t b = 0; b + 1 < o.size(); ++b) {
    const int64_t size = o[b + 1] - o[b];
    if (lengths) {
      const int64_t n = len[b];
      RECOPS_CHECK(n >= 0, op, ": ", len_arg, "[", b, "]=", n, " must be >= 0");
      const bool square = n == 0 ? size == 0 : (size % n == 0 && size / n == n);  // no n * n
      RECOPS_CHECK(square, op, ": ", off_arg, "[", b + 1, "]-", off_arg, "[", b, "]=", size,
                   " but ", len_arg, "[", b, "]=", n, "; block b must hold ", len_arg,
                   "[b]^2 elements");
    } else {
      const int64_t n = jagged2_side(size);
      RECOPS_CHECK(n * n == size, op, ": ", off_arg, "[", b + 1, "]-", off_arg, "[", b, "]=", size,
                   " is not a perfect square; block b must be N_b x N_b");
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
