// jagged/jagged2_dense_elementwise_mul/cpu/jagged2_dense_elementwise_mul_cpu.cpp: the optimized
// CPU path. Threads take samples b in chunks of about 16K elements' worth of max_L² (static); a
// block row m < n_b is n_b products (a plain loop the compiler vectorises when x is contiguous)
// and a zero fill, the rows below the window zero fills. 16-bit types multiply in fp32 (the
// product of two 16-bit values is exact there, so one rounding gives the fp64 golden's bits).
#include <algorithm>
#include <cstdint>

#include "recops/tensor_view.h"
#include "core/parallel.h"
#include "ops/jagged/common/jagged2_blocks.h"
#include "ops/jagged/common/jagged2_cpu.h"
#include "ops/jagged/jagged2_dense_elementwise_mul/impls.h"

namespace recops::ops::jagged2_dense_elementwise_mul_ns {
namespace {
template <class T>
void mul(const Params& p, int threads) {
  const T* a = static_cast<const T*>(p.a);
  const T* y = static_cast<const T*>(p.y);
  T* out = static_cast<T*>(p.out);
  const int64_t w =
      std::max<int64_t>(1, TensorView::mul_sat(p.max_L, p.max_L));  // max_L may be huge
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / w);
  core::parallel_for(p.B, grain, threads, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const Jagged2Block blk =
          jagged2_block_at(p.offsets, p.offsets_int64, p.offsets_stride, b, p.total);
      const int64_t N = blk.side, n = std::min(N, p.max_L);
      for (int64_t m = 0; m < N; ++m) {
        T* row = out + blk.begin + m * N;
        const int64_t k = m < n ? n : 0;
        const T* in = a + (blk.begin + m * N) * p.a_stride;
        const T* yr = y + m * p.y_row_stride;
        if (p.a_stride == 1) {
          for (int64_t c = 0; c < k; ++c)
            row[c] = jagged2_narrow<T>(jagged2_widen(in[c]) * jagged2_widen(yr[c]));
        } else {
          for (int64_t c = 0; c < k; ++c)
            row[c] = jagged2_narrow<T>(jagged2_widen(in[c * p.a_stride]) * jagged2_widen(yr[c]));
        }
        std::fill(row + k, row + N, T{});  // all-zero bits: +0
      }
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) { mul<decltype(t)>(p, ctx.num_threads); }))
    return Status(StatusCode::internal,
                  "jagged2_dense_elementwise_mul: cpu_generic: unsupported dtype");
  return Status::Ok();
}

}  // namespace recops::ops::jagged2_dense_elementwise_mul_ns
