// hstu_attn/cuda/fwd.cuh: the general forward (cuda_sm80), one instantiation per element type
// (inst_fwd_*.cu).
//
// A block owns (sequence b, query head hq, a tile of bq = 16 * warps query rows); blocks are
// ordered last query tile first (the longest causal rows start first). Each warp owns 16 rows.
// Key tiles of 64 stream through shared memory: S = Q Kᵀ (warp_mma, fp32 accumulation), then in
// registers P = M ⊙ SiLU(alpha (S + rab)) rounded to the storage type into the warp's rows of a
// shared P tile, then O += P V into an fp32 accumulator in shared memory (64-column chunks in
// registers). Key tiles that no row of the tile can see are skipped (the key span of the rows,
// then a per-tile test); tiles that every row sees fully skip the element mask test.
#pragma once

#include <climits>

#include "core/cuda/launch.h"
#include "ops/hstu/hstu_attn/cuda/common.cuh"
#include "ops/hstu/hstu_attn/cuda/tiles.h"
#include "recops/context.h"

namespace recops::ops::hstu_cuda {

constexpr int kFwdBk = tiles::kSm80KeyTile;  // keys per tile: 8 n-tiles of the score strip

struct FwdCfg {
  int bq;  // query rows per block (16 per warp)
  int dpad, dvpad;
  int ldq, ldk, ldvt, ldp, ldo;  // shared row strides (elements)
  size_t off_q, off_k, off_vt, off_p, off_o;
  int64_t n_qtiles;
  bool vec_q, vec_k, vec_v;
};

template <class T>
__global__ void __launch_bounds__(tiles::kSm80MaxThreads)
    hstu_fwd_kernel(const P p, const FwdCfg cfg) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem + cfg.off_q);
  T* sK = reinterpret_cast<T*>(smem + cfg.off_k);
  T* sVt = reinterpret_cast<T*>(smem + cfg.off_vt);
  T* sP = reinterpret_cast<T*>(smem + cfg.off_p);
  float* sO = reinterpret_cast<float*>(smem + cfg.off_o);
  __shared__ long long s_lo, s_hi;

  const int64_t b = blockIdx.x % p.B;
  const int64_t tile = cfg.n_qtiles - 1 - blockIdx.x / p.B;
  const int64_t hq = blockIdx.y;
  const Seq s = load_seq(p, b);
  const int64_t i0 = tile * cfg.bq;
  if (i0 >= s.Lq) return;
  const int nq = static_cast<int>(min64(cfg.bq, s.Lq - i0));
  const int64_t kh = hq / (p.Hq / p.Hk);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const float alpha = static_cast<float>(p.alpha);

  load_tile<T>(sQ, cfg.ldq, nullptr, 0, cfg.bq, nq, static_cast<int>(p.d), cfg.dpad, cfg.vec_q,
               [&](int r) {
                 return static_cast<const T*>(p.q) + b * p.q_batch + (s.q0 + i0 + r) * p.q_row +
                        hq * p.q_head;
               });
  for (int idx = threadIdx.x; idx < cfg.bq * cfg.ldo; idx += blockDim.x) sO[idx] = 0.f;
  if (threadIdx.x == 0) {
    s_lo = LLONG_MAX;
    s_hi = 0;
  }
  __syncthreads();
  {
    long long lo = LLONG_MAX, hi = 0;
    for (int r = threadIdx.x; r < nq; r += blockDim.x) {
      int64_t a, e;
      row_span(p, s, b, hq, i0 + r, &a, &e);
      if (a < e) {
        lo = a < lo ? a : lo;
        hi = e > hi ? e : hi;
      }
    }
    if (lo < hi) {
      atomicMin(&s_lo, lo);
      atomicMax(&s_hi, hi);
    }
  }
  __syncthreads();
  const int64_t klo = s_lo, khi = s_hi;

  const int row0 = warp * 16;
  for (int64_t c0 = klo < khi ? klo / kFwdBk * kFwdBk : khi; c0 < khi; c0 += kFwdBk) {
    const int nk = static_cast<int>(min64(kFwdBk, s.Lk - c0));
    bool meets = false, covers = true;
    for (int r = threadIdx.x; r < nq; r += blockDim.x) {
      const RowRange rr = row_vs_keys(p, s, b, hq, i0 + r, c0, c0 + nk);
      meets = meets || rr.meets;
      covers = covers && rr.covers;
    }
    if (!__syncthreads_or(meets)) continue;
    const bool full = __syncthreads_and(covers);
    load_tile<T>(sK, cfg.ldk, nullptr, 0, kFwdBk, nk, static_cast<int>(p.d), cfg.dpad, cfg.vec_k,
                 [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, false); });
    load_tile<T>(nullptr, 0, sVt, cfg.ldvt, kFwdBk, nk, static_cast<int>(p.dv), cfg.dvpad,
                 cfg.vec_v, [&](int r) { return key_row<T>(p, s, b, kh, c0 + r, true); });
    __syncthreads();

    float acc[8][4];
    acc_zero(acc);
    warp_mma<T>(acc, sQ + row0 * cfg.ldq, cfg.ldq, sK, cfg.ldk, cfg.dpad, 8);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + g + 8 * h;
        const int64_t i = i0 + row;
        float pv[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = 8 * j + 2 * t + e;
          const int64_t c = c0 + col;
          float v = 0.f;
          if (row < nq && col < nk && (full || elem_valid(p, s, b, hq, i, c))) {
            float x = acc[j][2 * h + e];
            if (p.rab)
              x += load_any(p.rab, p.dtype,
                            b * p.rab_s[0] + hq * p.rab_s[1] + i * p.rab_s[2] + c * p.rab_s[3]);
            x *= alpha;
            v = x * sigmoidf_fast(x);
          }
          pv[e] = v;
        }
        store_pair<T>(sP + row * cfg.ldp + 8 * j + 2 * t, pv[0], pv[1]);
      }
    }
    __syncwarp();
    warp_mma_wide<T>(sO + row0 * cfg.ldo, cfg.ldo, sP + row0 * cfg.ldp, cfg.ldp, sVt, cfg.ldvt,
                     kFwdBk, cfg.dvpad);
  }
  __syncthreads();
  const int dv = static_cast<int>(p.dv);
  for (int idx = threadIdx.x; idx < nq * dv; idx += blockDim.x) {
    const int r = idx / dv, y = idx - r * dv;
    const int64_t i = i0 + r;
    T* o = static_cast<T*>(p.out) + b * p.o_batch + (s.q0 + i) * p.o_row + hq * p.o_head;
    o[y] = Elem<T>::from_f(sO[r * cfg.ldo + y] * row_scale(p, s, b, i));
  }
}

// True when every row of a tensor addressed as base + b*bs + row*rs + h*hs starts 16-byte aligned.
inline bool rows_aligned16(const void* base, size_t es, std::initializer_list<int64_t> strides) {
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0) return false;
  for (int64_t s : strides)
    if ((static_cast<uint64_t>(s < 0 ? -s : s) * es) % 16 != 0) return false;
  return true;
}

inline bool q_vec(const P& p, size_t es) {
  return rows_aligned16(p.q, es, {p.q_batch, p.q_row, p.q_head});
}
inline bool k_vec(const P& p, size_t es) {
  bool ok = rows_aligned16(p.k, es, {p.k_batch, p.k_row, p.k_head});
  if (p.kv_cache) ok = ok && rows_aligned16(p.kv_cache, es, {p.kv_s[0], p.kv_s[2], p.kv_s[3]});
  return ok;
}
inline bool v_vec(const P& p, size_t es) {
  bool ok = rows_aligned16(p.v, es, {p.v_batch, p.v_row, p.v_head});
  if (p.kv_cache)
    ok = ok && rows_aligned16(p.kv_cache, es, {p.kv_s[0], p.kv_s[1], p.kv_s[2], p.kv_s[3]});
  return ok;
}

// The largest shared memory one block may use on the current device.
inline Status smem_limit(size_t* bytes) {
  const cudaDeviceProp* prop = nullptr;
  RECOPS_RETURN_IF_ERROR(core::cuda::current_device_properties(&prop));
  *bytes = prop->sharedMemPerBlockOptin;
  return Status::Ok();
}

template <class T>
Status run_fwd(const P& p, const Context& ctx) {
  constexpr const char* kOp = "hstu_attn_fwd";
  const size_t es = sizeof(T);
  size_t limit = 0;
  RECOPS_RETURN_IF_ERROR(smem_limit(&limit));
  FwdCfg c{};
  c.dpad = round_up(p.d, 16);
  c.dvpad = round_up(p.dv, 16);
  size_t bytes = 0;
  for (int warps : tiles::kSm80Warps) {
    c.bq = 16 * warps;
    c.ldq = c.ldk = c.dpad + 8;
    c.ldvt = c.ldp = kFwdBk + 8;
    c.ldo = c.dvpad + 4;
    SmemPlan plan;
    c.off_q = plan.take(c.bq * c.ldq * es);
    c.off_k = plan.take(kFwdBk * c.ldk * es);
    c.off_vt = plan.take(c.dvpad * c.ldvt * es);
    c.off_p = plan.take(c.bq * c.ldp * es);
    c.off_o = plan.take(c.bq * c.ldo * sizeof(float));
    bytes = plan.bytes;
    if (bytes + 64 <= limit) break;
  }
  if (bytes + 64 > limit)
    return Status(StatusCode::not_implemented,
                  detail::cat(kOp, ": cuda_sm80 needs ", bytes, " bytes of shared memory for d=",
                              p.d, ", dv=", p.dv, " but the device allows ", limit));
  c.n_qtiles = (p.Sq + c.bq - 1) / c.bq;
  const int64_t gx = c.n_qtiles * p.B;
  if (gx == 0) return Status::Ok();
  if (gx > INT_MAX || p.Hq > 65535)
    return Status(StatusCode::not_implemented,
                  detail::cat(kOp, ": cuda_sm80 grid too large (", gx, " x ", p.Hq, ")"));
  c.vec_q = q_vec(p, es);
  c.vec_k = k_vec(p, es);
  c.vec_v = v_vec(p, es);
  const int threads = c.bq * 2;  // 32 per 16 rows
  return RECOPS_LAUNCH_KERNEL(kOp, hstu_fwd_kernel<T>,
                              dim3(static_cast<unsigned>(gx), static_cast<unsigned>(p.Hq)),
                              dim3(threads), bytes, ctx.stream, p, c);
}

}  // namespace recops::ops::hstu_cuda
