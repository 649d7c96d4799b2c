// stem_prepare, CUDA (spec §6, §8): kernels on the call's stream.
//
// - group_sum_kernel (q and k): one thread per 8 consecutive output elements (b, h, block, group,
//   d..d+7) when the rows allow 16-byte loads (D % 8 == 0, aligned bases and strides; 8-byte
//   loads for fp8), else one thread per element; d fastest, so a warp reads consecutive parts of
//   one token row. The R tokens of a group are summed per element in fp32 in ascending r with the
//   CPU's rounding (scale·x, then the add, each one fp32 rounding: __fmul_rn / __fadd_rn, no
//   contraction) and rounded once to bf16. Keys are stored in mirrored group order. Padding
//   blocks get zeros.
// - vbias, in two steps when kflat can hold the ℓ values as scratch (R·Kmax fp32 per (b, KV
//   head) fit in its Kmax·Df bf16, i.e. Df·2 >= R·4; kflat is written only afterwards):
//   ell_kernel, a warp per group of Ts tokens over the whole grid, takes the max of
//   ‖v_scale·v[s]‖₂ (fp32 squares summed in lanes, then across the warp) and stores
//   ℓ = logf(m + 1e-6); vbias_kernel, one CTA per (b, KV head), reduces Σℓ and Σℓ² in fp64 in a
//   fixed order into μ and the sample σ and writes vbias[j] = (1/R)·Σ_r λ·max(0, (ℓ − μ)/(σ +
//   1e-6)) in the CPU's fp32 order. Otherwise (tiny Df) vbias_kernel computes ℓ itself (the first
//   version: ℓ cached in shared memory when Kmax·R ≤ kEllCache, else recomputed).
// Lengths, offsets and page ids are read on the device and clamped into the tensors' extents, so
// unvalidated values never address memory outside them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <initializer_list>

#include "core/cuda/launch.h"
#include "ops/stem/common/cuda/qkv_args.cuh"
#include "ops/stem/prepare/impls.h"

namespace recops::ops {
namespace {

constexpr const char* kOp = "stem_prepare";
constexpr int kThreads = 256;
constexpr int kVbiasThreads = 256;
constexpr int64_t kEllCache = 16384;  // floats of ℓ kept in shared memory (64 KiB)

enum class Elem : int { bf16 = 0, fp16 = 1, fp8 = 2 };

// q, k, v (read by dtype) and the index tensors: stem/common/cuda/qkv_args.cuh.
struct Args : stem_cuda::QkvArgs<void> {
  const float* q_scale;
  const float* k_scale;
  const float* v_scale;
  bool q_scale_per_token, k_scale_per_token, v_scale_per_head;
  uint16_t* qflat;
  uint16_t* kflat;
  float* vbias;
  int64_t Dv, Ts, R;
  float lambda;
  Elem elem;
};

using stem_cuda::clamp64;
using stem_cuda::kv_token;

__device__ __forceinline__ float load_elem(const void* base, int64_t off, Elem e) {
  if (e == Elem::bf16) {
    const uint32_t u = static_cast<uint32_t>(__ldg(static_cast<const uint16_t*>(base) + off)) << 16;
    return __uint_as_float(u);
  }
  if (e == Elem::fp16) {
    const unsigned short h = __ldg(static_cast<const unsigned short*>(base) + off);
    return __half2float(__ushort_as_half(h));
  }
  const __nv_fp8_storage_t b = static_cast<const __nv_fp8_storage_t*>(base)[off];
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3)));
}

// Batch b's query rows [q0, q0 + Lq) of q, clamped into [0, Tq).
__device__ __forceinline__ void q_range(const Args& a, int64_t b, int64_t* q0, int64_t* Lq) {
  const int64_t s = clamp64(a.cu_q[b * a.cu_q_stride], 0, a.Tq);
  const int64_t e = clamp64(a.cu_q[(b + 1) * a.cu_q_stride], s, a.Tq);
  *q0 = s;
  *Lq = e - s < a.Qmax * a.Bs ? e - s : a.Qmax * a.Bs;
}

// Batch b's key count, clamped so that every token s < Lk addresses memory inside k and v.
__device__ __forceinline__ int64_t kv_len(const Args& a, int64_t b, int64_t* kv0) {
  int64_t L = clamp64(a.lk[b * a.lk_stride], 0, a.Kmax * a.Bs);
  if (a.paged) {
    *kv0 = 0;
    return L < a.max_pages * a.page_size ? L : a.max_pages * a.page_size;
  }
  *kv0 = clamp64(a.cu_kv[b * a.cu_kv_stride], 0, a.Tk);
  return L < a.Tk - *kv0 ? L : a.Tk - *kv0;
}

__device__ __forceinline__ int64_t k_off(const Args& a, int64_t tok, int64_t h) {
  if (!a.paged) return tok * a.k_tok_stride + h * a.k_head_stride;
  return tok / a.page_size * a.k_page_stride + tok % a.page_size * a.k_tok_stride +
         h * a.k_head_stride;
}
__device__ __forceinline__ int64_t v_off(const Args& a, int64_t tok, int64_t h) {
  if (!a.paged) return tok * a.v_tok_stride + h * a.v_head_stride;
  return tok / a.page_size * a.v_page_stride + tok % a.page_size * a.v_tok_stride +
         h * a.v_head_stride;
}

__device__ __forceinline__ uint16_t to_bf16_bits(float x) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

// kKeys = false: qflat; true: kflat (mirrored groups, paged or packed).
template <bool kKeys>
__global__ void __launch_bounds__(kThreads) group_sum_kernel(Args a) {
  const int64_t H = kKeys ? a.Nk : a.Nq, NB = kKeys ? a.Kmax : a.Qmax;
  const int64_t Df = a.Ts * a.D, total = a.B * H * NB * Df;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t d = idx % a.D, slot = idx / a.D % a.Ts, blk = idx / Df % NB;
    const int64_t h = idx / (Df * NB) % H, b = idx / (Df * NB * H);
    const int64_t g = kKeys ? a.Ts - 1 - slot : slot;
    float acc = 0.0f;
    if (!kKeys) {
      int64_t q0, Lq;
      q_range(a, b, &q0, &Lq);
      for (int64_t r = 0; r < a.R; ++r) {
        const int64_t t = blk * a.Bs + g + r * a.Ts;
        if (t >= Lq) break;
        const int64_t tok = q0 + t;
        const float sc = a.q_scale == nullptr
                             ? 1.0f
                             : (a.q_scale_per_token ? a.q_scale[tok * a.Nq + h] : a.q_scale[0]);
        const float x = load_elem(a.q, tok * a.q_tok_stride + h * a.q_head_stride + d, a.elem);
        acc = __fadd_rn(acc, __fmul_rn(sc, x));
      }
    } else {
      int64_t kv0;
      const int64_t Lk = kv_len(a, b, &kv0);
      for (int64_t r = 0; r < a.R; ++r) {
        const int64_t s = blk * a.Bs + g + r * a.Ts;
        if (s >= Lk) break;
        const int64_t tok = kv_token(a, b, kv0, s);
        const float sc = a.k_scale == nullptr
                             ? 1.0f
                             : (a.k_scale_per_token ? a.k_scale[tok * a.Nk + h] : a.k_scale[0]);
        const float x = load_elem(a.k, k_off(a, tok, h) + d, a.elem);
        acc = __fadd_rn(acc, __fmul_rn(sc, x));
      }
    }
    (kKeys ? a.kflat : a.qflat)[idx] = to_bf16_bits(acc);
  }
}

// Elements [off, off + 8) as fp32 (16-byte load for bf16/fp16, 8-byte for fp8; off aligned).
__device__ __forceinline__ void load8_elem(const void* base, int64_t off, Elem e, float (&x)[8]) {
  if (e == Elem::fp8) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(base) + off));
    const uint32_t w[2] = {u.x, u.y};
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const auto b8 = static_cast<__nv_fp8_storage_t>((w[k / 4] >> (8 * (k % 4))) & 0xffu);
      x[k] = __half2float(__half(__nv_cvt_fp8_to_halfraw(b8, __NV_E4M3)));
    }
    return;
  }
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(base) + off));
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const uint32_t h = (w[k / 2] >> (16 * (k % 2))) & 0xffffu;
    x[k] = e == Elem::bf16 ? __uint_as_float(h << 16)
                           : __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
  }
}

// group_sum_kernel with 8 consecutive d per thread (same per-element arithmetic and order).
template <bool kKeys>
__global__ void __launch_bounds__(kThreads) group_sum8_kernel(Args a) {
  const int64_t H = kKeys ? a.Nk : a.Nq, NB = kKeys ? a.Kmax : a.Qmax;
  const int64_t D8 = a.D / 8, Df = a.Ts * a.D, total = a.B * H * NB * a.Ts * D8;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t d = idx % D8 * 8, slot = idx / D8 % a.Ts, blk = idx / (D8 * a.Ts) % NB;
    const int64_t h = idx / (D8 * a.Ts * NB) % H, b = idx / (D8 * a.Ts * NB * H);
    const int64_t g = kKeys ? a.Ts - 1 - slot : slot;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t n = 0, first = 0, kv0 = 0;
    if (!kKeys) {
      int64_t q0, Lq;
      q_range(a, b, &q0, &Lq);
      first = q0;
      n = Lq;
    } else {
      n = kv_len(a, b, &kv0);
    }
    for (int64_t r = 0; r < a.R; ++r) {
      const int64_t t = blk * a.Bs + g + r * a.Ts;
      if (t >= n) break;
      float x[8];
      float sc = 1.0f;
      if (!kKeys) {
        const int64_t tok = first + t;
        if (a.q_scale != nullptr)
          sc = a.q_scale_per_token ? a.q_scale[tok * a.Nq + h] : a.q_scale[0];
        load8_elem(a.q, tok * a.q_tok_stride + h * a.q_head_stride + d, a.elem, x);
      } else {
        const int64_t tok = kv_token(a, b, kv0, t);
        if (a.k_scale != nullptr)
          sc = a.k_scale_per_token ? a.k_scale[tok * a.Nk + h] : a.k_scale[0];
        load8_elem(a.k, k_off(a, tok, h) + d, a.elem, x);
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) acc[k] = __fadd_rn(acc[k], __fmul_rn(sc, x[k]));
    }
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      w[k] = static_cast<uint32_t>(to_bf16_bits(acc[2 * k])) |
             (static_cast<uint32_t>(to_bf16_bits(acc[2 * k + 1])) << 16);
    uint16_t* dst = (kKeys ? a.kflat : a.qflat) + ((b * H + h) * NB + blk) * Df + slot * a.D + d;
    *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// ℓ of group t of batch b, head h (all lanes of the warp get it).
__device__ float group_ell(const Args& a, int64_t b, int64_t h, int64_t kv0, int64_t Lk, int64_t t,
                           float vs) {
  const int lane = threadIdx.x & 31;
  float m = 0.0f;
  for (int64_t s = t * a.Ts; s < (t + 1) * a.Ts && s < Lk; ++s) {
    const int64_t base = v_off(a, kv_token(a, b, kv0, s), h);
    float sq = 0.0f;
    for (int64_t d = lane; d < a.Dv; d += 32) {
      const float x = load_elem(a.v, base + d, a.elem);
      sq = __fadd_rn(sq, __fmul_rn(x, x));
    }
    for (int o = 16; o >= 1; o >>= 1) sq = __fadd_rn(sq, __shfl_xor_sync(0xffffffffu, sq, o));
    const float x = __fmul_rn(vs, __fsqrt_rn(sq));
    m = (x > m || x != x) ? x : m;  // a NaN in V sticks (fmaxf would drop it)
  }
  return logf(__fadd_rn(m, 1e-6f));
}

// ℓ of every group (b, KV head, t < R·Kb), a warp per group over the whole grid, into the
// scratch `ell` ([B·Nk] rows of `ell_stride` floats).
__global__ void __launch_bounds__(kVbiasThreads)
    ell_kernel(Args a, float* ell, int64_t ell_stride) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  const int64_t per_task = a.R * a.Kmax, total = a.B * a.Nk * per_task;
  for (int64_t w = blockIdx.x * int64_t{blockDim.x / 32} + threadIdx.x / 32; w < total;
       w += warps) {
    const int64_t task = w / per_task, t = w % per_task;
    const int64_t b = task / a.Nk, h = task % a.Nk;
    int64_t kv0;
    const int64_t Lk = kv_len(a, b, &kv0);
    if (t >= a.R * ((Lk + a.Bs - 1) / a.Bs)) continue;  // uniform across the warp
    const float vs =
        fabsf(a.v_scale == nullptr ? 1.0f : (a.v_scale_per_head ? a.v_scale[h] : a.v_scale[0]));
    const float e = group_ell(a, b, h, kv0, Lk, t, vs);
    if (lane == 0) ell[task * ell_stride + t] = e;
  }
}

// mode 0: ℓ recomputed; 1: ℓ cached in shared memory; 2: ℓ read from the scratch of ell_kernel.
__global__ void __launch_bounds__(kVbiasThreads)
    vbias_kernel(Args a, int mode, const float* ell, int64_t ell_stride) {
  const bool cache = mode == 1;
  extern __shared__ float ell_cache[];
  __shared__ double red_sum[kVbiasThreads / 32], red_sq[kVbiasThreads / 32];
  __shared__ float stats[2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = kVbiasThreads / 32;
  for (int64_t task = blockIdx.x; task < a.B * a.Nk; task += gridDim.x) {
    const int64_t b = task / a.Nk, h = task % a.Nk;
    int64_t kv0;
    const int64_t Lk = kv_len(a, b, &kv0);
    const int64_t Kb = (Lk + a.Bs - 1) / a.Bs, n = a.R * Kb;
    const float vs =
        fabsf(a.v_scale == nullptr ? 1.0f : (a.v_scale_per_head ? a.v_scale[h] : a.v_scale[0]));
    double sum = 0, sq = 0;
    const float* ell_row = mode == 2 ? ell + task * ell_stride : nullptr;
    for (int64_t t = warp; t < n; t += nw) {
      const float e = mode == 2 ? ell_row[t] : group_ell(a, b, h, kv0, Lk, t, vs);
      if (lane == 0) {
        sum += e;
        sq += static_cast<double>(e) * e;
        if (cache) ell_cache[t] = e;
      }
    }
    if (lane == 0) {
      red_sum[warp] = sum;
      red_sq[warp] = sq;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double s1 = 0, s2 = 0;
      for (int w = 0; w < nw; ++w) {
        s1 += red_sum[w];
        s2 += red_sq[w];
      }
      const double mu = n > 0 ? s1 / static_cast<double>(n) : 0.0;
      double sigma = 0;
      if (n > 1) {
        const double var = (s2 - s1 * mu) / static_cast<double>(n - 1);
        // A negative var is rounding (σ = 0); a NaN one (an infinite ℓ: inf − inf) stays NaN, as
        // the reference's σ of the deviations is.
        sigma = var > 0 ? sqrt(var) : (var != var ? var : 0.0);
      }
      stats[0] = static_cast<float>(mu);
      stats[1] = static_cast<float>(1.0 / (sigma + 1e-6));
    }
    __syncthreads();
    const float muf = stats[0], inv = stats[1];
    const float inv_r = 1.0f / static_cast<float>(a.R);
    float* out = a.vbias + task * a.Kmax;
    if (mode != 0) {
      const float* src = mode == 2 ? ell_row : ell_cache;
      for (int64_t j = threadIdx.x; j < a.Kmax; j += blockDim.x) {
        float acc = 0.0f;
        if (j < Kb)
          for (int64_t r = 0; r < a.R; ++r) {
            const float z = __fmul_rn(__fsub_rn(src[j * a.R + r], muf), inv);
            acc = __fadd_rn(acc, __fmul_rn(a.lambda, z != z ? z : fmaxf(0.0f, z)));
          }
        out[j] = __fmul_rn(acc, inv_r);
      }
    } else {
      for (int64_t j = warp; j < a.Kmax; j += nw) {
        float acc = 0.0f;
        if (j < Kb)
          for (int64_t r = 0; r < a.R; ++r) {
            const float e = group_ell(a, b, h, kv0, Lk, j * a.R + r, vs);
            const float z = __fmul_rn(__fsub_rn(e, muf), inv);
            acc = __fadd_rn(acc, __fmul_rn(a.lambda, z != z ? z : fmaxf(0.0f, z)));
          }
        if (lane == 0) out[j] = __fmul_rn(acc, inv_r);
      }
    }
    __syncthreads();  // stats and the cache are reused by the next task
  }
}

}  // namespace

Status stem_prepare_cuda(const StemPrepareParams& p, const Context& ctx) {
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  Args a{};
  stem_cuda::set_qkv_args(p, &a);
  a.q_scale = p.q_scale;
  a.k_scale = p.k_scale;
  a.v_scale = p.v_scale;
  a.q_scale_per_token = p.q_scale_per_token;
  a.k_scale_per_token = p.k_scale_per_token;
  a.v_scale_per_head = p.v_scale_per_head;
  a.qflat = p.qflat;
  a.kflat = p.kflat;
  a.vbias = p.vbias;
  a.Dv = p.Dv;
  a.Ts = p.Ts;
  a.R = p.R;
  a.lambda = static_cast<float>(p.lambda_mag);
  a.elem = p.dtype == DType::bf16 ? Elem::bf16 : (p.dtype == DType::fp16 ? Elem::fp16 : Elem::fp8);

  const int64_t Df = p.Ts * p.D;
  // vbias first: in the scratch mode its ℓ values live in kflat until the key sums overwrite it.
  if (p.B * p.Nk * p.Kmax > 0) {
    const bool scratch =
        Df >= 2 * p.R && (p.Kmax * Df) % 2 == 0 && (reinterpret_cast<uintptr_t>(p.kflat) & 3u) == 0;
    const int64_t ell_stride = p.Kmax * Df / 2;  // floats per (b, KV head) row of kflat
    float* ell = scratch ? reinterpret_cast<float*>(p.kflat) : nullptr;
    if (scratch) {
      auto* ke = &ell_kernel;
      unsigned grid = 1;
      RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(
          reinterpret_cast<const void*>(ke), kVbiasThreads, 0,
          (p.B * p.Nk * p.R * p.Kmax + kVbiasThreads / 32 - 1) / (kVbiasThreads / 32), &grid));
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, ke, dim3(grid), dim3(kVbiasThreads), 0,
                                                  ctx.stream, a, ell, ell_stride));
    }
    const int mode = scratch ? 2 : (p.Kmax * p.R <= kEllCache ? 1 : 0);
    const size_t smem = mode == 1 ? static_cast<size_t>(p.Kmax * p.R) * sizeof(float) : 0;
    auto* kv = &vbias_kernel;
    unsigned grid = 1;
    RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(kv),
                                                       kVbiasThreads, smem, p.B * p.Nk, &grid));
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(kOp, kv, dim3(grid), dim3(kVbiasThreads), smem,
                                                ctx.stream, a, mode, static_cast<const float*>(ell),
                                                ell_stride));
  }
  // 8 elements per thread when every row start is 16-byte aligned (8-byte for fp8).
  const int64_t esz = p.dtype == DType::fp8_e4m3 ? 1 : 2;
  auto aligned = [&](const void* ptr, std::initializer_list<int64_t> strides) {
    bool ok = (reinterpret_cast<uintptr_t>(ptr) & static_cast<uintptr_t>(8 * esz - 1)) == 0;
    for (int64_t st : strides) ok = ok && st % 8 == 0;
    return ok;
  };
  const bool vec8 = p.D % 8 == 0 && (reinterpret_cast<uintptr_t>(p.qflat) & 15u) == 0 &&
                    (reinterpret_cast<uintptr_t>(p.kflat) & 15u) == 0 &&
                    aligned(p.q, {p.q_tok_stride, p.q_head_stride}) &&
                    aligned(p.k, {p.k_tok_stride, p.k_head_stride, p.k_page_stride});
  const int64_t per = vec8 ? 8 : 1;
  // The group sums of `elems` output elements (qflat, then kflat).
  auto group_sums = [&](auto* kernel, int64_t elems) -> Status {
    if (elems <= 0) return Status::Ok();
    unsigned grid = 1;
    RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(kernel),
                                                       kThreads, 0, elems / per, &grid));
    return RECOPS_LAUNCH_KERNEL(kOp, kernel, dim3(grid), dim3(kThreads), 0, ctx.stream, a);
  };
  RECOPS_RETURN_IF_ERROR(group_sums(vec8 ? &group_sum8_kernel<false> : &group_sum_kernel<false>,
                                    p.B * p.Nq * p.Qmax * Df));
  return group_sums(vec8 ? &group_sum8_kernel<true> : &group_sum_kernel<true>,
                    p.B * p.Nk * p.Kmax * Df);
}

}  // namespace recops::ops
