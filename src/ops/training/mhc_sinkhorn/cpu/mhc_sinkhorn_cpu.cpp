// training/mhc_sinkhorn/cpu/mhc_sinkhorn_cpu.cpp: cpu_generic. OpenMP over blocks of tokens (one
// n x n matrix each). Arithmetic in Acc: float for fp32, double for fp64.
//
// Forward: the softmax per row, + eps, then 2·iters - 1 normalisations in place, the axis
// alternating (columns first). Backward: the forward is rerun from the logits keeping the input
// of every normalisation (2·iters - 1 matrices of n² Acc per thread, plus the softmax); then the
// gradient walks back through them: for a step y = x·r with r = 1/(sum_axis x + eps),
// dx = r·(dy - sum_axis dy·y), y recomputed as x·r; and dlogits = p·(dp - sum_row dp·p).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/mhc_sinkhorn/impls.h"

namespace recops::ops::mhc_sinkhorn_ns {
namespace {

// Row-wise softmax of the n x n logits `l` into `p` (max-shifted; the shift has no gradient).
template <class Acc, class T>
void softmax_rows(const T* l, int64_t n, Acc* p) {
  for (int64_t i = 0; i < n; ++i) {
    const T* row = l + i * n;
    Acc* pr = p + i * n;
    Acc mx = static_cast<Acc>(row[0]);
    for (int64_t j = 1; j < n; ++j)
      mx = static_cast<Acc>(row[j]) > mx ? static_cast<Acc>(row[j]) : mx;
    Acc z = 0;
    for (int64_t j = 0; j < n; ++j) {
      pr[j] = std::exp(static_cast<Acc>(row[j]) - mx);
      z += pr[j];
    }
    const Acc inv = Acc(1) / z;
    for (int64_t j = 0; j < n; ++j) pr[j] *= inv;
  }
}

// The softmax's backward per row: out = p·(g - <g, p>), p the softmax without the added eps.
template <class Acc, class T>
void softmax_rows_back(const Acc* p, const Acc* g, int64_t n, T* out) {
  for (const Acc* end = p + n * n; p != end; p += n, g += n, out += n) {
    const Acc d = std::inner_product(g, g + n, p, Acc(0));
    for (int64_t j = 0; j < n; ++j) out[j] = static_cast<T>(p[j] * (g[j] - d));
  }
}

// m /= (column sums + eps) (cols = true) or (row sums + eps), in place.
template <class Acc>
void scale_axis(Acc* m, int64_t n, bool cols, Acc eps, Acc* sums) {
  if (cols) {
    std::fill(sums, sums + n, Acc(0));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) sums[j] += m[i * n + j];
    for (int64_t j = 0; j < n; ++j) sums[j] = Acc(1) / (sums[j] + eps);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) m[i * n + j] *= sums[j];
  } else {
    for (int64_t i = 0; i < n; ++i) {
      Acc s = 0;
      for (int64_t j = 0; j < n; ++j) s += m[i * n + j];
      const Acc r = Acc(1) / (s + eps);
      for (int64_t j = 0; j < n; ++j) m[i * n + j] *= r;
    }
  }
}

// g <- r·(g - sum_axis g·y) with y = x·r, r = 1/(sum_axis x + eps), for the step whose input is x.
template <class Acc>
void step_back(const Acc* x, Acc* g, int64_t n, bool cols, Acc eps, Acc* r, Acc* dot) {
  if (cols) {
    std::fill(r, r + n, Acc(0));
    std::fill(dot, dot + n, Acc(0));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) r[j] += x[i * n + j];
    for (int64_t j = 0; j < n; ++j) r[j] = Acc(1) / (r[j] + eps);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) dot[j] += g[i * n + j] * (x[i * n + j] * r[j]);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) g[i * n + j] = r[j] * (g[i * n + j] - dot[j]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      Acc s = 0;
      for (int64_t j = 0; j < n; ++j) s += x[i * n + j];
      const Acc ri = Acc(1) / (s + eps);
      Acc d = 0;
      for (int64_t j = 0; j < n; ++j) d += g[i * n + j] * (x[i * n + j] * ri);
      for (int64_t j = 0; j < n; ++j) g[i * n + j] = ri * (g[i * n + j] - d);
    }
  }
}

template <class T>
void run_typed(const Params& p, int threads) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t n = p.n, nn = n * n, steps = 2 * p.iters - 1;
  const Acc eps = static_cast<Acc>(p.eps);
  const T* logits = static_cast<const T*>(p.logits);
  const T* dP = static_cast<const T*>(p.dP);
  T* out = static_cast<T*>(p.out);
  const int64_t work = std::max<int64_t>(1, nn * steps);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / work);
  core::parallel_for(p.tokens, grain, threads, [&](int64_t begin, int64_t end) {
    // Forward: one matrix. Backward: the softmax, the input of each step, the gradient.
    std::vector<Acc> sm(nn), xs(p.backward ? nn * steps : nn), g(p.backward ? nn : 0);
    std::vector<Acc> v1(n), v2(n);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t base = t * nn;
      softmax_rows(logits + base, n, sm.data());
      Acc* m = xs.data();
      for (int64_t k = 0; k < nn; ++k) m[k] = sm[k] + eps;
      if (!p.backward) {
        for (int64_t k = 1; k <= steps; ++k) scale_axis(m, n, k % 2 == 1, eps, v1.data());
        for (int64_t k = 0; k < nn; ++k) out[base + k] = static_cast<T>(m[k]);
        continue;
      }
      // xs[k-1] is the input of step k; step k's output goes to xs[k] (the last stays in g's
      // place: it is not needed, y being recomputed from x).
      for (int64_t k = 1; k < steps; ++k) {
        std::copy(xs.begin() + (k - 1) * nn, xs.begin() + k * nn, xs.begin() + k * nn);
        scale_axis(xs.data() + k * nn, n, k % 2 == 1, eps, v1.data());
      }
      for (int64_t k = 0; k < nn; ++k) g[k] = static_cast<Acc>(dP[base + k]);
      for (int64_t k = steps; k >= 1; --k)
        step_back(xs.data() + (k - 1) * nn, g.data(), n, k % 2 == 1, eps, v1.data(), v2.data());
      softmax_rows_back(sm.data(), g.data(), n, out + base);
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (p.dtype == DType::fp64) {
    run_typed<double>(p, ctx.num_threads);
  } else if (p.dtype == DType::fp32) {
    run_typed<float>(p, ctx.num_threads);
  } else {
    return Status(StatusCode::internal, "mhc_sinkhorn: cpu_generic reached with a bad dtype");
  }
  return Status::Ok();
}

}  // namespace recops::ops::mhc_sinkhorn_ns
