// ops/jagged/common/row_copy_cpu.cpp: cpu_generic of both conversions. Work items are the output
// rows, split into equal contiguous ranges across threads (each row costs the same: D elements
// copied or filled), so skewed lengths balance by construction; about grain_bytes of output per
// chunk (tuned, default 64 KiB) so that small problems stay on one thread. A row is one memcpy,
// or a fill; with streaming stores for outputs of 4 MiB or more (common/cpu_stream.h).
//   to_dense:  dense rows (b, l); a padding row is copied from a prepared row of padding elements.
//   to_jagged: jagged rows r; each thread finds the sequence of its first row by binary search over
//              the offsets, then walks forward; a row past S is a memset.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "core/parallel.h"
#include "core/scalar.h"
#include "ops/jagged/common/cpu_stream.h"
#include "ops/jagged/common/row_copy.h"

namespace recops::ops {
namespace {

// Rows [begin, end) of the dense output (b, l) = (r / S, r % S).
// With `nt` every row goes through streaming stores (common/cpu_stream.h: an output of
// kStreamTotal bytes or more), fenced at the end of the range.
template <bool nt>
void copy_row(char* dst, const char* src, size_t bytes) {
  if constexpr (nt)
    jagged_cpu::stream_copy(dst, src, static_cast<int64_t>(bytes));
  else
    std::memcpy(dst, src, bytes);
}

template <bool nt>
void to_dense_rows(const RowCopyParams& p, const char* pad_row, int64_t begin, int64_t end) {
  const size_t row_bytes = static_cast<size_t>(p.D * p.elem_size);
  const auto* values = static_cast<const char*>(p.src);
  auto* out = static_cast<char*>(p.dst);
  auto offset = [&](int64_t i) {
    return core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i);
  };
  int64_t b = begin / p.S, l = begin % p.S;
  int64_t start = core::clamp_offset(offset(b), p.total_L);
  int64_t length = core::clamp_offset(offset(b + 1), p.total_L) - start;
  for (int64_t r = begin; r < end; ++r) {
    char* dst = out + (b * p.dense_batch_stride + l * p.dense_row_stride) * p.elem_size;
    if (l < length) {
      copy_row<nt>(dst, values + (start + l) * p.jagged_row_stride * p.elem_size, row_bytes);
    } else {
      copy_row<nt>(dst, pad_row, row_bytes);
    }
    if (++l == p.S && r + 1 < end) {
      l = 0;
      ++b;
      start = core::clamp_offset(offset(b), p.total_L);
      length = core::clamp_offset(offset(b + 1), p.total_L) - start;
    }
  }
  if constexpr (nt) jagged_cpu::stream_fence();
}

// Rows [begin, end) of the jagged output.
template <bool nt>
void to_jagged_rows(const RowCopyParams& p, int64_t begin, int64_t end) {
  const size_t row_bytes = static_cast<size_t>(p.D * p.elem_size);
  const auto* dense = static_cast<const char*>(p.src);
  auto* out = static_cast<char*>(p.dst);
  auto offset = [&](int64_t i) {
    return core::clamp_offset(
        core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i), p.total_L);
  };
  // Last b with offset(b) <= begin: the sequence holding row `begin` (skipping empty ones).
  int64_t lo = 0, hi = p.B - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (offset(mid) <= begin)
      lo = mid;
    else
      hi = mid - 1;
  }
  int64_t b = lo;
  int64_t seq_end = offset(b + 1);
  int64_t l = begin - offset(b);
  for (int64_t r = begin; r < end; ++r, ++l) {
    while (r >= seq_end) {  // move on to the next non-empty sequence
      ++b;
      seq_end = offset(b + 1);
      l = r - offset(b);
    }
    char* dst = out + r * p.jagged_row_stride * p.elem_size;
    if (l < p.S)
      copy_row<nt>(dst, dense + (b * p.dense_batch_stride + l * p.dense_row_stride) * p.elem_size,
                   row_bytes);
    else if constexpr (nt)
      jagged_cpu::stream_zero(dst, static_cast<int64_t>(row_bytes));
    else
      std::memset(dst, 0, row_bytes);
  }
  if constexpr (nt) jagged_cpu::stream_fence();
}

}  // namespace

Status row_copy_cpu(const RowCopyParams& p, const Context& ctx) {
  const bool to_dense = p.dir == RowCopyDir::to_dense;
  const int64_t rows = to_dense ? p.B * p.S : p.total_L;  // output rows
  if (rows == 0 || p.D == 0) return Status::Ok();
  const int64_t row_bytes = p.D * p.elem_size;
  // The output's extent in bytes, for huge pages (only with non-negative strides).
  auto* out = static_cast<char*>(p.dst);
  if (to_dense && p.dense_batch_stride >= 0 && p.dense_row_stride >= 0)
    core::advise_huge_pages(out, static_cast<size_t>(((p.B - 1) * p.dense_batch_stride +
                                                      (p.S - 1) * p.dense_row_stride + p.D) *
                                                     p.elem_size));
  if (!to_dense && p.jagged_row_stride >= 0)
    core::advise_huge_pages(
        out, static_cast<size_t>(((p.total_L - 1) * p.jagged_row_stride + p.D) * p.elem_size));

  static const std::vector<TuneConfig> candidates = core::row_copy_cpu_candidates();
  core::TuneQuery q;
  q.op = row_copy_op(p.dir);
  q.impl = "cpu_generic";
  q.dtype = p.dtype;
  q.bucket = core::row_copy_bucket(row_bytes, rows);
  q.candidates = &candidates;
  q.fallback = core::row_copy_cpu_default();
  TuneConfig tc;
  RECOPS_RETURN_IF_ERROR(core::resolve_config(q, ctx, &tc));
  const int64_t grain = std::max<int64_t>(1, tc.get("grain_bytes", 65536) / row_bytes);

  const bool nt = rows * row_bytes >= jagged_cpu::kStreamTotal;
  if (!to_dense) {
    core::parallel_for(rows, grain, ctx.num_threads, [&](int64_t begin, int64_t end) {
      if (nt)
        to_jagged_rows<true>(p, begin, end);
      else
        to_jagged_rows<false>(p, begin, end);
    });
    return Status::Ok();
  }
  // One row of padding, built once; filling copies from it.
  std::vector<char> pad_row(static_cast<size_t>(row_bytes));
  for (int64_t d = 0; d < p.D; ++d)
    std::memcpy(pad_row.data() + d * p.elem_size, &p.padding_bits,
                static_cast<size_t>(p.elem_size));
  core::parallel_for(rows, grain, ctx.num_threads, [&](int64_t begin, int64_t end) {
    if (nt)
      to_dense_rows<true>(p, pad_row.data(), begin, end);
    else
      to_dense_rows<false>(p, pad_row.data(), begin, end);
  });
  return Status::Ok();
}

}  // namespace recops::ops
