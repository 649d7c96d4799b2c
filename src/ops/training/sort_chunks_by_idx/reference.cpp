// training/sort_chunks_by_idx/reference.cpp: the golden: the concatenation of the chunks in
// sorted_idx order, row by row, straight from the spec (§3.8); the backward moves each row back
// to where it came from. Reads the (checked) index values directly; shares no code with cpu/ or
// cuda/.
#include <cstring>
#include <vector>

#include "ops/training/sort_chunks_by_idx/impls.h"

namespace recops::ops::sort_chunks_by_idx_ns {
namespace {
int64_t value(const void* p, DType t, int64_t i) {
  return t == DType::int64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

// Row r of an array of `bytes`-sized rows.
const char* row(const void* base, int64_t r, int64_t bytes) {
  return static_cast<const char*>(base) + r * bytes;
}
char* row(void* base, int64_t r, int64_t bytes) {
  return static_cast<char*>(base) + r * bytes;
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  // start[c]: the first input row of chunk c.
  std::vector<int64_t> start(static_cast<size_t>(p.C) + 1, 0);
  for (int64_t c = 0; c < p.C; ++c)
    start[c + 1] = start[c] + value(p.split_sizes, p.split_dtype, c);
  int64_t out_row = 0;  // the next row of the concatenation
  for (int64_t k = 0; k < p.C; ++k) {
    const int64_t c = value(p.sorted_idx, p.idx_dtype, k);
    for (int64_t in_row = start[c]; in_row < start[c + 1]; ++in_row, ++out_row) {
      // Forward: output[out_row] = input[in_row]; backward: grad_input[in_row] =
      // grad_output[out_row].
      const int64_t f = p.inverse ? out_row : in_row, t = p.inverse ? in_row : out_row;
      std::memcpy(row(p.to, t, p.row_bytes), row(p.from, f, p.row_bytes),
                  static_cast<size_t>(p.row_bytes));
      if (p.from_probs)
        std::memcpy(row(p.to_probs, t, p.probs_bytes), row(p.from_probs, f, p.probs_bytes),
                    static_cast<size_t>(p.probs_bytes));
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops::sort_chunks_by_idx_ns
