// training/fused_cross_entropy/cuda/kernel.cuh: the device code and the per-dtype launchers that
// inst/ instantiates. fp32 statistics throughout.
//
// One CTA per row (a grid-stride loop over rows); thread t takes the row's vectors t, t + width,
// ... (kN = 16 / sizeof(T) elements when every row start is 16-byte aligned, else 1).
//   fwd: one read of the row: per thread an online (max, sum of exp) and the plain sum, combined
//        over the CTA (warp butterfly, then the warps in order); thread 0 adds the label's term.
//        "none" writes per-row loss/z_loss; "sum"/"mean" write per-row w*l, w*z and w to the
//        workspace, and total_kernel (one CTA) adds them in a fixed order (fp64) and divides by
//        Dn = the sum of w (0 when Dn = 0).
//   bwd: "mean" first runs denominator_kernel (one CTA) for Dn; then one read of the row and one
//        write of dlogits. Rows with s_i = 0 (ignored, g = 0, Dn = 0) only write zeros.
// Labels outside [0, V) that are not ignore_index (possible with validation off) are treated as
// ignored, so no access leaves the row. Index math is 64-bit. No atomics: results do not depend on
// timing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "core/cuda/launch.h"
#include "ops/training/common/cuda/ce_row.cuh"
#include "ops/training/common/cuda/row_norm.cuh"
#include "ops/training/fused_cross_entropy/cuda/launch.h"
#include "ops/training/fused_cross_entropy/cuda/tiles.h"

namespace recops::ops::fused_cross_entropy_ns {

using training_dev::capped;
using training_dev::ce_counted;
using training_dev::ce_label_at;
using training_dev::cta_combine;
using training_dev::cta_sum;
using training_dev::load_vec;
using training_dev::MaxSum;
using training_dev::store_vec;
using training_dev::to_float;

// weight[i]: fp32 or T (the entry allows those two).
template <class T>
__device__ __forceinline__ float weight_at(const Params& p, int64_t i) {
  if (p.weight == nullptr) return 1.f;
  if (p.weight_dtype == DType::fp32) return static_cast<const float*>(p.weight)[i];
  return to_float(static_cast<const T*>(p.weight)[i]);
}

template <class T, int kN>
__global__ void __launch_bounds__(kMaxThreads) fwd_kernel(Params p) {
  __shared__ MaxSum sm_ms[32];
  __shared__ float sm_z[32];
  const int64_t V = p.V, nvec = V / kN;
  const float cap = static_cast<float>(p.softcap), eps = static_cast<float>(p.label_smoothing);
  const float lam = static_cast<float>(p.z_loss_scale);
  const bool none = p.reduction == Red::none;
  float* loss = static_cast<float*>(none ? p.loss : p.workspace);
  float* zl = none ? static_cast<float*>(p.z_loss) : loss + p.N;
  for (int64_t row = blockIdx.x; row < p.N; row += gridDim.x) {
    const int64_t y = ce_label_at(p, row);
    float r_lse = 0.f, r_loss = 0.f, r_z = 0.f, r_w = 0.f;
    if (ce_counted(p, y)) {  // the same for the whole CTA
      const T* z = static_cast<const T*>(p.logits) + row * V;
      MaxSum ms{-INFINITY, 0.f};
      float sz = 0.f;
      for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
        float x[kN];
        load_vec<T, kN>(z + v * kN, x);
        float vm = -INFINITY;
#pragma unroll
        for (int k = 0; k < kN; ++k) {
          x[k] = capped(x[k], cap);
          vm = fmaxf(vm, x[k]);
          sz += x[k];
        }
        if (vm > ms.m) {
          ms.s = ms.m == -INFINITY ? 0.f : ms.s * expf(ms.m - vm);
          ms.m = vm;
        }
        if (ms.m != -INFINITY) {
#pragma unroll
          for (int k = 0; k < kN; ++k) ms.s += expf(x[k] - ms.m);
        }
      }
      cta_combine(ms, sz, sm_ms, sm_z);
      if (threadIdx.x == 0) {
        // fmaxf passes over a NaN and an all -inf prefix skips its exps: a NaN sum (a NaN logit,
        // or +inf with -inf) gives lse NaN, as the CPU's and the golden's.
        r_lse = sz == sz ? ms.m + logf(ms.s) : sz;
        const float zy = capped(to_float(z[y]), cap);
        r_w = weight_at<T>(p, row);
        r_z = lam * r_lse * r_lse;
        // The smoothing term only when eps != 0 (no 0 * inf from a -inf logit; torch's formula).
        const float smooth = eps != 0.f ? eps * (r_lse - sz / static_cast<float>(V)) : 0.f;
        r_loss = (1.f - eps) * (r_lse - zy) + smooth + r_z;
        r_loss *= r_w;
        r_z *= r_w;
      }
    }
    if (threadIdx.x == 0) {
      static_cast<float*>(p.lse)[row] = r_lse;
      loss[row] = r_loss;
      zl[row] = r_z;
      if (!none) loss[2 * p.N + row] = r_w;
    }
  }
}

// "sum"/"mean": loss[0], z_loss[0] from the [3, N] per-row workspace. One CTA.
static __global__ void __launch_bounds__(kReduceThreads) total_kernel(Params p) {
  __shared__ double sm[3][32];
  const float* ws = static_cast<const float*>(p.workspace);
  double v[3] = {0, 0, 0};
  for (int64_t i = threadIdx.x; i < p.N; i += blockDim.x)
    for (int j = 0; j < 3; ++j) v[j] += ws[j * p.N + i];
  cta_sum(v, sm);
  if (threadIdx.x == 0) {
    const double d = p.reduction == Red::mean ? v[2] : 1.0;
    static_cast<float*>(p.loss)[0] = d == 0 ? 0.f : static_cast<float>(v[0] / d);
    static_cast<float*>(p.z_loss)[0] = d == 0 ? 0.f : static_cast<float>(v[1] / d);
  }
}

// "mean" backward: workspace[0] = Dn, the sum of w over the rows not ignored. One CTA.
template <class T>
__global__ void __launch_bounds__(kReduceThreads) denominator_kernel(Params p) {
  __shared__ double sm[1][32];
  double v[1] = {0};
  for (int64_t i = threadIdx.x; i < p.N; i += blockDim.x)
    if (ce_counted(p, ce_label_at(p, i))) v[0] += weight_at<T>(p, i);
  cta_sum(v, sm);
  if (threadIdx.x == 0) static_cast<float*>(p.workspace)[0] = static_cast<float>(v[0]);
}

template <class T, int kN>
__global__ void __launch_bounds__(kMaxThreads) bwd_kernel(Params p) {
  const int64_t V = p.V, nvec = V / kN;
  const float cap = static_cast<float>(p.softcap), eps = static_cast<float>(p.label_smoothing);
  const float lam = static_cast<float>(p.z_loss_scale);
  const float dn = p.reduction == Red::mean ? static_cast<const float*>(p.workspace)[0] : 1.f;
  for (int64_t row = blockIdx.x; row < p.N; row += gridDim.x) {
    const int64_t y = ce_label_at(p, row);
    float s = 0.f;
    if (ce_counted(p, y)) {
      s = static_cast<const float*>(p.grad)[p.reduction == Red::none ? row : 0] *
          weight_at<T>(p, row);
      if (p.reduction == Red::mean) s = dn == 0.f ? 0.f : s / dn;
    }
    const T* z = static_cast<const T*>(p.logits) + row * V;
    T* o = static_cast<T*>(p.out) + row * V;
    const float l = static_cast<const float*>(p.lse)[row];
    // d = s ((1 + 2 lam lse) p - eps/V - [j = y](1 - eps)): s multiplies last, as in the golden,
    // so a non-finite s, lse or logit gives the golden's inf or NaN (not inf - inf from s folded
    // in).
    const float a = 1.f + 2.f * lam * l, bias = eps / static_cast<float>(V);
    const float hit = 1.f - eps;
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
      float x[kN];
      if (s == 0.f) {
#pragma unroll
        for (int k = 0; k < kN; ++k) x[k] = 0.f;
      } else {
        load_vec<T, kN>(z + v * kN, x);
#pragma unroll
        for (int k = 0; k < kN; ++k) {
          const int64_t j = v * kN + k;
          const float t = cap > 0.f ? tanhf(x[k] / cap) : 0.f;
          const float zc = cap > 0.f ? cap * t : x[k];
          const float d = (a * expf(zc - l) - bias - (j == y ? hit : 0.f)) * s;
          x[k] = cap > 0.f ? d * (1.f - t * t) : d;
        }
      }
      store_vec<T, kN>(o + v * kN, x);
    }
  }
}

// kN: the widest vector every row start allows.
template <class T>
int vec_width(const Params& p) {
  constexpr int kWide = 16 / sizeof(T);
  const bool ok = p.V % kWide == 0 && reinterpret_cast<uintptr_t>(p.logits) % 16 == 0 &&
                  (!p.bwd || reinterpret_cast<uintptr_t>(p.out) % 16 == 0);
  return ok ? kWide : 1;
}

inline dim3 row_grid(const Params& p) {
  return dim3(static_cast<unsigned>(std::min<int64_t>(p.N, kMaxRowBlocks)));
}

template <class T>
Status launch_fwd(const Params& p, const Context& ctx) {
  constexpr int kWide = 16 / sizeof(T);
  const int kn = vec_width<T>(p);
  const dim3 block(row_threads(p.V / kn));
  if (p.N > 0) {
    const Status s = kn == kWide
                         ? RECOPS_LAUNCH_KERNEL("fused_cross_entropy", (fwd_kernel<T, kWide>),
                                                row_grid(p), block, 0, ctx.stream, p)
                         : RECOPS_LAUNCH_KERNEL("fused_cross_entropy", (fwd_kernel<T, 1>),
                                                row_grid(p), block, 0, ctx.stream, p);
    if (!s.ok()) return s;
  }
  if (p.reduction == Red::none) return Status::Ok();
  return RECOPS_LAUNCH_KERNEL("fused_cross_entropy", total_kernel, dim3(1), dim3(kReduceThreads), 0,
                              ctx.stream, p);
}

template <class T>
Status launch_bwd(const Params& p, const Context& ctx) {
  constexpr int kWide = 16 / sizeof(T);
  if (p.reduction == Red::mean) {
    const Status s = RECOPS_LAUNCH_KERNEL("fused_cross_entropy_bwd", denominator_kernel<T>, dim3(1),
                                          dim3(kReduceThreads), 0, ctx.stream, p);
    if (!s.ok()) return s;
  }
  const int kn = vec_width<T>(p);
  const dim3 block(row_threads(p.V / kn));
  return kn == kWide ? RECOPS_LAUNCH_KERNEL("fused_cross_entropy_bwd", (bwd_kernel<T, kWide>),
                                            row_grid(p), block, 0, ctx.stream, p)
                     : RECOPS_LAUNCH_KERNEL("fused_cross_entropy_bwd", (bwd_kernel<T, 1>),
                                            row_grid(p), block, 0, ctx.stream, p);
}

}  // namespace recops::ops::fused_cross_entropy_ns
