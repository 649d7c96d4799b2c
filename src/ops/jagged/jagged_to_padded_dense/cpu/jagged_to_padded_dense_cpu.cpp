// jagged_to_padded_dense/cpu: the optimized CPU path. Work items are dense rows (b, l), split into
// equal contiguous ranges across threads (each row costs the same: D elements copied or filled),
// so skewed lengths balance by construction. A copied row is one memcpy; padding rows are filled
// from a prepared row of padding elements.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "core/parallel.h"
#include "ops/jagged/common/row_copy_tuning.h"
#include "core/scalar.h"
#include "ops/jagged/jagged_to_padded_dense/impls.h"

namespace recops::ops {
namespace {
const std::vector<TuneConfig>& candidates() {
  static const std::vector<TuneConfig> c = core::row_copy_cpu_candidates();
  return c;
}
}  // namespace

std::vector<TuneConfig> jagged_to_padded_dense_cpu_candidates() {
  return candidates();
}

Status jagged_to_padded_dense_cpu(const JaggedToPaddedDenseParams& p, const Context& ctx) {
  const int64_t rows = p.B * p.max_L;
  if (rows == 0 || p.D == 0) return Status::Ok();
  const size_t row_bytes = static_cast<size_t>(p.D * p.elem_size);
  // One row of padding, built once; filling copies from it.
  std::vector<char> pad_row(row_bytes);
  for (int64_t d = 0; d < p.D; ++d)
    std::memcpy(pad_row.data() + d * p.elem_size, &p.padding_bits,
                static_cast<size_t>(p.elem_size));

  const auto* values = static_cast<const char*>(p.values);
  auto* out = static_cast<char*>(p.out);
  if (p.out_batch_stride >= 0 && p.out_row_stride >= 0)  // the output's extent, in bytes
    core::advise_huge_pages(out, static_cast<size_t>(((p.B - 1) * p.out_batch_stride +
                                                      (p.max_L - 1) * p.out_row_stride + p.D) *
                                                     p.elem_size));
  auto offset = [&](int64_t i) {
    return core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i);
  };
  // Grain: about grain_bytes of output per chunk (default 64 KiB) so that small problems stay on
  // one thread.
  core::TuneQuery q;
  q.op = "jagged_to_padded_dense";
  q.impl = "cpu_generic";
  q.dtype = p.dtype;
  q.bucket = core::row_copy_bucket(static_cast<int64_t>(row_bytes), rows);
  q.candidates = &candidates();
  q.fallback = core::row_copy_cpu_default();
  TuneConfig tc;
  RECOPS_RETURN_IF_ERROR(core::resolve_config(q, ctx, &tc));
  const int64_t grain =
      std::max<int64_t>(1, tc.get("grain_bytes", 65536) / static_cast<int64_t>(row_bytes));
  core::parallel_for(rows, grain, ctx.num_threads, [&](int64_t begin, int64_t end) {
    int64_t b = begin / p.max_L, l = begin % p.max_L;
    int64_t start = core::clamp_offset(offset(b), p.total_L);
    int64_t length = core::clamp_offset(offset(b + 1), p.total_L) - start;
    for (int64_t r = begin; r < end; ++r) {
      char* dst = out + (b * p.out_batch_stride + l * p.out_row_stride) * p.elem_size;
      if (l < length) {
        std::memcpy(dst, values + (start + l) * p.values_row_stride * p.elem_size, row_bytes);
      } else {
        std::memcpy(dst, pad_row.data(), row_bytes);
      }
      if (++l == p.max_L && r + 1 < end) {
        l = 0;
        ++b;
        start = core::clamp_offset(offset(b), p.total_L);
        length = core::clamp_offset(offset(b + 1), p.total_L) - start;
      }
    }
  });
  return Status::Ok();
}

}  // namespace recops::ops
