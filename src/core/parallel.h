// core/parallel.h: CPU threading helpers (OpenMP when available, serial otherwise).
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "recops/isa_ns.h"

namespace recops::core {
// The ISA-named inline namespace (recops/isa_ns.h): the *_avx2 / *_avx512 files include this header
// too, and an out-of-line copy of max_threads compiled there must not serve baseline code
// (scripts/check_isa_objects.sh found one in jagged_softmax_cpu_avx2.cpp.o of the clang sanitizer
// build).
inline namespace RECOPS_ISA_NS {

// The threads a CPU kernel may start: `requested` (0: OpenMP's default), at most four per
// processor. A request of tens of thousands (torch.set_num_threads(60000), Context::num_threads)
// would otherwise make libgomp fail to create them and crash; oversubscribing beyond 4x only adds
// switching. Callers cap further at their work items.
inline int max_threads(int requested = 0) {
#ifdef _OPENMP
  const int cap = 4 * std::max(1, omp_get_num_procs());
  return std::min(requested > 0 ? requested : omp_get_max_threads(), cap);
#else
  (void)requested;
  return 1;
#endif
}

// max_threads(requested), and no more than `work` items (at least 1).
inline int max_threads(int requested, int64_t work) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(max_threads(requested), work)));
}

// Calls fn(begin, end) over [0, n) split into contiguous chunks of at least `grain` items,
// statically scheduled so that results never depend on timing. The split follows the team OpenMP
// actually starts, which can be smaller than asked: one thread when called from inside another
// parallel region (nesting is off by default), fewer under OMP_DYNAMIC=true or OMP_THREAD_LIMIT.
// Splitting by the requested count there left all but the first share of [0, n) undone.
template <class F>
void parallel_for(int64_t n, int64_t grain, int threads, F&& fn) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  const int nt = static_cast<int>(std::min<int64_t>(max_threads(threads), max_chunks));
  if (nt <= 1) {
    fn(int64_t{0}, n);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), team = omp_get_num_threads();
    const int64_t begin = n * t / team, end = n * (t + 1) / team;
    if (begin < end) fn(begin, end);
  }
#else
  fn(int64_t{0}, n);
#endif
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::core
