// jagged/concat_2d_jagged/cpu/concat_2d_jagged_cpu.cpp: the optimized CPU path: parallel over the
// destination rows (chunks of about 64 KiB), each row one memcpy from its source (rowmap.h) or a
// zero fill. Any dtype: rows are bytes.
#include <cstring>

#include "core/parallel.h"
#include "ops/jagged/concat_2d_jagged/impls.h"
#include "ops/jagged/concat_2d_jagged/rowmap.h"

namespace recops::ops::concat_2d_jagged_ns {

Status run_cpu(const Params& p, const Context& ctx) {
  const int64_t row_bytes = p.D * p.itemsize;
  const int64_t grain = row_bytes >= 65536 ? 1 : 65536 / (row_bytes > 0 ? row_bytes : 1);
  auto fill = [&](int dest, void* base, int64_t rows) {
    char* dst = static_cast<char*>(base);
    core::parallel_for(rows, grain, ctx.num_threads, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const char* src = source_row(p, dest, r);
        if (src)
          std::memcpy(dst + r * row_bytes, src, static_cast<size_t>(row_bytes));
        else
          std::memset(dst + r * row_bytes, 0, static_cast<size_t>(row_bytes));
      }
    });
  };
  if (row_bytes == 0) return Status::Ok();
  if (!p.backward) {
    fill(0, p.out, p.out_rows);
  } else {
    fill(1, p.a.grad, p.a.rows);
    fill(2, p.b.grad, p.b.rows);
  }
  return Status::Ok();
}

}  // namespace recops::ops::concat_2d_jagged_ns
