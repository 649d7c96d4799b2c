// stem_prepare, optimised CPU (spec §8): OpenMP over (batch, head, block) for the group sums and
// over (batch, KV head) for vbias; a block's D-wide group sums accumulate in fp32 over its R
// rows (the rows of one group are Ts tokens apart), each input element converted once through a
// per-dtype loader; vbias norms in fp32, the log statistics reduced in fp64.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "ops/stem/common/stem_rules.h"
#include "ops/stem/prepare/impls.h"

namespace recops::ops {
namespace {

// Element loaders by dtype into fp32 (fp16 and fp8 through tables built once): the fp32 value of
// every bit pattern of the storage type S (Half, Fp8E4M3).
template <class S>
const float* value_table() {
  using Bits = decltype(S::bits);
  static const std::vector<float> t = [] {
    std::vector<float> v(size_t{1} << (8 * sizeof(Bits)));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(to_double(S{static_cast<Bits>(i)}));
    return v;
  }();
  return t.data();
}

// dst[d] += scale · src[d] for d < n, src of `dtype`.
void axpy(float* dst, const void* src, DType dtype, int64_t n, float scale) {
  if (dtype == DType::bf16) {
    const auto* s = static_cast<const uint16_t*>(src);
    for (int64_t d = 0; d < n; ++d) {
      const uint32_t u = static_cast<uint32_t>(s[d]) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      dst[d] += scale * f;
    }
  } else if (dtype == DType::fp16) {
    const float* t = value_table<Half>();
    const auto* s = static_cast<const uint16_t*>(src);
    for (int64_t d = 0; d < n; ++d) dst[d] += scale * t[s[d]];
  } else {
    const float* t = value_table<Fp8E4M3>();
    const auto* s = static_cast<const uint8_t*>(src);
    for (int64_t d = 0; d < n; ++d) dst[d] += scale * t[s[d]];
  }
}

// Squared L2 norm of n elements of `dtype`, in fp32.
float sq_norm(const void* src, DType dtype, int64_t n) {
  float acc[8] = {};
  std::vector<float> row(static_cast<size_t>(n), 0.0f);
  axpy(row.data(), src, dtype, n, 1.0f);
  int64_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (int l = 0; l < 8; ++l) acc[l] += row[d + l] * row[d + l];
  for (; d < n; ++d) acc[d % 8] += row[d] * row[d];
  float s = 0;
  for (float x : acc) s += x;
  return s;
}

int64_t elem_bytes(DType t) {
  return dtype_size(t);
}

}  // namespace

Status stem_prepare_cpu(const StemPrepareParams& p, const Context& ctx) {
  const int64_t Df = p.Ts * p.D, es = elem_bytes(p.dtype);
  const auto* qb = static_cast<const char*>(p.q);
  const auto* kb = static_cast<const char*>(p.k);
  const auto* vb = static_cast<const char*>(p.v);
  // qflat: one (b, h, i) block per task. With Df = 0 qflat and kflat are empty (and Qmax, Kmax
  // may be huge): no tasks.
  const int64_t nq = Df > 0 ? p.B * p.Nq * p.Qmax : 0;
  // Each loop starts no more threads than it has tasks.
#pragma omp parallel for schedule(dynamic, 4) num_threads(core::max_threads(ctx.num_threads, nq))
  for (int64_t task = 0; task < nq; ++task) {
    const int64_t b = task / (p.Nq * p.Qmax), h = task / p.Qmax % p.Nq, i = task % p.Qmax;
    const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b];
    std::vector<float> acc(static_cast<size_t>(Df), 0.0f);
    for (int64_t g = 0; g < p.Ts; ++g)
      for (int64_t r = 0; r < p.R; ++r) {
        const int64_t t = i * p.Bs + g + r * p.Ts;
        if (t >= Lq) break;
        const int64_t tok = p.cu_q[b] + t;
        axpy(acc.data() + g * p.D, qb + (tok * p.q_tok_stride + h * p.q_head_stride) * es, p.dtype,
             p.D, p.q_scale_at(tok, h));
      }
    uint16_t* out = p.qflat + task * Df;
    for (int64_t d = 0; d < Df; ++d) out[d] = bf16_from_float(acc[d]).bits;
  }
  // kflat: one (b, h, j) block per task, groups mirrored.
  const int64_t nk = Df > 0 ? p.B * p.Nk * p.Kmax : 0;
#pragma omp parallel for schedule(dynamic, 4) num_threads(core::max_threads(ctx.num_threads, nk))
  for (int64_t task = 0; task < nk; ++task) {
    const int64_t b = task / (p.Nk * p.Kmax), h = task / p.Kmax % p.Nk, j = task % p.Kmax;
    const int64_t Lk = p.Lk[b];
    std::vector<float> acc(static_cast<size_t>(Df), 0.0f);
    for (int64_t g = 0; g < p.Ts; ++g)
      for (int64_t r = 0; r < p.R; ++r) {
        const int64_t s = j * p.Bs + g + r * p.Ts;
        if (s >= Lk) break;
        axpy(acc.data() + (p.Ts - 1 - g) * p.D, kb + p.k_off(b, s, h) * es, p.dtype, p.D,
             p.k_scale_at(b, s, h));
      }
    uint16_t* out = p.kflat + task * Df;
    for (int64_t d = 0; d < Df; ++d) out[d] = bf16_from_float(acc[d]).bits;
  }
  // vbias: one (b, h) per task. With Dv = 0 every norm is 0, so every ℓ equals μ and vbias is 0:
  // written directly, since Lk is then bounded by no tensor (a huge page of an empty V) and the
  // O(Lk) statistics would be a hang.
  if (p.Dv == 0) {
    for (int64_t i = 0; i < p.B * p.Nk * p.Kmax; ++i) p.vbias[i] = 0.0f;
    return Status::Ok();
  }
#pragma omp parallel for schedule(dynamic, 1) \
    num_threads(core::max_threads(ctx.num_threads, p.B* p.Nk))
  for (int64_t task = 0; task < p.B * p.Nk; ++task) {
    const int64_t b = task / p.Nk, h = task % p.Nk, Lk = p.Lk[b];
    const int64_t Kb = stem::ceil_div(Lk, p.Bs), n = p.R * Kb;
    const float vs = std::fabs(p.v_scale_at(h));
    std::vector<float> ell(static_cast<size_t>(n));
    double mu = 0;
    for (int64_t t = 0; t < n; ++t) {
      float m = 0;
      for (int64_t s = t * p.Ts; s < (t + 1) * p.Ts && s < Lk; ++s) {
        const float x = vs * std::sqrt(sq_norm(vb + p.v_off(b, s, h) * es, p.dtype, p.Dv));
        m = (x > m || x != x) ? x : m;  // a NaN in V sticks (non-finite rule, README)
      }
      ell[t] = std::log(m + 1e-6f);
      mu += ell[t];
    }
    double sigma = 0;
    if (n > 0) mu /= static_cast<double>(n);
    if (n > 1) {
      for (float x : ell) sigma += (x - mu) * (x - mu);
      sigma = std::sqrt(sigma / static_cast<double>(n - 1));
    }
    const float muf = static_cast<float>(mu), inv = static_cast<float>(1.0 / (sigma + 1e-6));
    const float lam = static_cast<float>(p.lambda_mag), inv_r = 1.0f / static_cast<float>(p.R);
    float* out = p.vbias + task * p.Kmax;
    for (int64_t j = 0; j < p.Kmax; ++j) {
      float acc = 0;
      if (j < Kb)
        for (int64_t r = 0; r < p.R; ++r) {
          const float z = (ell[j * p.R + r] - muf) * inv;
          acc += lam * (z > 0.0f || z != z ? z : 0.0f);
        }
      out[j] = acc * inv_r;
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
