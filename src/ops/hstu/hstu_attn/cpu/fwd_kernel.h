// hstu_attn/cpu/fwd_kernel.h: the tiled CPU forward, portable C++ included by one file per ISA
// (hstu_attn_fwd_cpu.cpp: baseline flags; hstu_attn_fwd_cpu_avx2.cpp: AVX2 + FMA). Everything
// here has internal linkage (an anonymous namespace), so the copies compiled with different flags
// never merge at link time; the hot loops use no standard-library templates for the same reason.
//
// The forward. Work items are (sequence, query head, query tile of kBq
// rows); threads take them dynamically (each item is independent, so results do not depend on
// the schedule). Per item, key tiles of kBk keys stream through: K is converted to fp32 and
// transposed ([d][kBk]) so that the score row S[i, :] = sum_x q[i, x] * kT[x, :] vectorises over
// keys without reassociating a sum; P·V accumulates into fp32 rows [kBq][dv] the same way. The
// [S, S] score matrix never exists: memory is O(kBq·kBk + kBk·(d + dv) + kBq·(d + dv)) per thread.
//
// The mask of one query row is a short list of key intervals (spec §3 rules as ranges; the
// custom mask tensor adds an element test). A key tile that meets no row's interval is skipped
// before any arithmetic (causal upper triangle, outside the window, other target groups).
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/parallel.h"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {
namespace {

using P = HstuAttnParams;
constexpr int64_t kBq = 128;  // query rows per work item: each converted key feeds 128 rows
constexpr int64_t kBk = 64;

float load_f(const void* base, DType t, int64_t off) {
  switch (t) {
    case DType::fp16: return to_float(static_cast<const Half*>(base)[off]);
    case DType::bf16: return to_float(static_cast<const BFloat16*>(base)[off]);
    default: return static_cast<const float*>(base)[off];
  }
}

void store_f(void* base, DType t, int64_t off, float x) {
  switch (t) {
    case DType::fp16: static_cast<Half*>(base)[off] = half_from_double(x); break;
    case DType::bf16: static_cast<BFloat16*>(base)[off] = bf16_from_float(x); break;
    default: static_cast<float*>(base)[off] = x; break;
  }
}

// dst[j] = src[off + j] as fp32 for j < n; the dtype switch sits outside the loops so that the
// bf16 and fp32 cases vectorise.
inline void load_row(const void* base, DType t, int64_t off, float* dst, int64_t n) {
  switch (t) {
    case DType::bf16: {
      const auto* s = static_cast<const uint16_t*>(base) + off;
      for (int64_t j = 0; j < n; ++j) {
        const uint32_t u = static_cast<uint32_t>(s[j]) << 16;
        std::memcpy(dst + j, &u, sizeof u);
      }
      break;
    }
    case DType::fp32:
      std::memcpy(dst, static_cast<const float*>(base) + off,
                  sizeof(float) * static_cast<size_t>(n));
      break;
    default:
      for (int64_t j = 0; j < n; ++j) dst[j] = load_f(base, t, off + j);
  }
}

struct Interval {
  int64_t lo, hi;  // keys [lo, hi)
};

// The valid keys of query row i as at most `max_iv` intervals (spec §3; custom mask: [0, Lk)
// with an element test later). Returns the count written.
int row_intervals(const P& p, int64_t b, int64_t hq, int64_t i, int64_t Lq, int64_t Lk,
                  Interval* iv) {
  int n = 0;
  auto add = [&](int64_t lo, int64_t hi) {
    lo = lo < 0 ? 0 : lo;
    hi = hi < Lk ? hi : Lk;
    if (lo < hi) iv[n++] = {lo, hi};
  };
  if (p.mask) {
    add(0, Lk);
    return n;
  }
  if (p.func) {
    const int64_t hf = p.func_s[0] == 0 ? 0 : hq, tok = p.q_token(b, i);
    auto F = [&](int64_t j) {
      return static_cast<int64_t>(p.func[hf * p.func_s[0] + j * p.func_s[1] + tok * p.func_s[2]]);
    };
    add(0, F(0));
    for (int64_t j = 1; j + 1 < p.nfunc; j += 2) add(F(j), F(j + 1));
    return n;
  }
  const int64_t r = i + (Lk - Lq), C = p.contexts(b), T = p.targets(b), h = Lk - T;
  if (C > 0 && r < C) {
    add(0, h);
    return n;
  }
  const int64_t lo = p.window_left >= 0 ? r - p.window_left : 0;
  const int64_t hi = p.window_right >= 0 ? r + p.window_right + 1 : Lk;
  if (T > 0 && r >= h) {
    const int64_t g = (r - h) / p.group_size;
    const int64_t t0 = h + g * p.group_size;
    add(lo, hi < h ? hi : h);
    add(lo > t0 ? lo : t0, hi);
  } else {
    add(lo, hi);
  }
  return n;
}

// Element offsets of key position c (cache first, then the new tokens) in the tensor it lives in.
struct KeyRow {
  const void* k;
  int64_t k_off;
  const void* v;
  int64_t v_off;
};
KeyRow key_row(const P& p, int64_t b, int64_t kh, int64_t c, int64_t cached, int64_t page0) {
  if (c < cached) {
    const int64_t page =
        P::load(p.page_ids, p.page_ids_int64, p.page_ids_stride, page0 + c / p.page_size);
    const int64_t base = page * p.kv_s[0] + (c % p.page_size) * p.kv_s[2] + kh * p.kv_s[3];
    return {p.kv_cache, base, p.kv_cache, base + p.kv_s[1]};
  }
  const int64_t t = p.k_start(b) + (c - cached);
  return {p.k, b * p.k_batch + t * p.k_row + kh * p.k_head, p.v,
          b * p.v_batch + t * p.v_row + kh * p.v_head};
}

struct Item {
  int64_t b, hq, i0;
};

// Register-blocked products on GCC/Clang vector types (8 floats: one AVX register, a pair of SSE
// registers at the baseline flags). kRb rows × kCb columns of accumulators stay in registers
// while the reduction dim streams.
// The including file defines RECOPS_HSTU_VW, the lanes of one vector register (4: SSE, 8: AVX2).
#ifndef RECOPS_HSTU_VW
#error "define RECOPS_HSTU_VW (4 or 8) before including fwd_kernel.h"
#endif
constexpr int64_t kVw = RECOPS_HSTU_VW;
typedef float V8 __attribute__((vector_size(4 * RECOPS_HSTU_VW)));
typedef int32_t V8i __attribute__((vector_size(4 * RECOPS_HSTU_VW)));
constexpr int64_t kRb = 4;
constexpr int64_t kCb = 2 * kVw;  // two vectors per row

inline V8 load8(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, V8 v) {
  std::memcpy(p, &v, sizeof v);
}

// SiLU(x) = x σ(x) on one vector, in plain arithmetic the compiler keeps in vector registers
// (glibc's expf is a call per element). σ comes from e = exp(-|x|) so that nothing overflows: σ =
// 1/(1+e) for x >= 0, e/(1+e) below. exp(t), t <= 0: 2^n · e^r with n = round(t/ln2) (the 1.5·2^23
// trick), |r| <= ln2/2, a degree-6 Taylor polynomial (relative error ~2e-7), and the exponent bits
// assembled in integers; e is 0 for t below -87 (σ is then 0 or 1 exactly).
inline V8 sigmoid8(V8 x) {
  const V8 zero = {};
  const V8 ax = x < zero ? -x : x;
  V8 t = -ax;
  t = t < -87.0f ? V8{} - 87.0f : t;
  const V8 n = (t * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const V8 r = (t - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
  V8 p = V8{} + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const V8i bits = (__builtin_convertvector(n, V8i) + 127) << 23;
  V8 scale;
  std::memcpy(&scale, &bits, sizeof scale);
  // Past -87 the clamp would leave e ≈ 1e-38 and SiLU(x) = x·e far from 0 for huge |x|: e is 0
  // there, so σ(x) is exactly 0 (and SiLU(-inf) = -inf·0 = NaN, as in the reference).
  const V8 e = ax > 87.0f ? V8{} : p * scale;
  const V8 one = V8{} + 1.0f;
  return (x >= zero ? one : e) / (one + e);
}

inline V8 silu8(V8 x) {
  return x * sigmoid8(x);
}

// s[r][c] = sum_x qt[r][x] * kt[x][c] for r < nq (a multiple of kRb), c < kBk, x < d; qt rows
// are lda apart. Equivalent scalar loop: s[r*kBk+c] = sum_x qt[r*lda+x] * kt[x*kBk+c].
inline void scores(const float* qt, int64_t lda, const float* kt, float* s, int64_t nq, int64_t d) {
  for (int64_t r0 = 0; r0 < nq; r0 += kRb) {
    const float* q0 = qt + r0 * lda;
    for (int64_t c0 = 0; c0 < kBk; c0 += kCb) {
      V8 a00 = {}, a01 = {}, a10 = {}, a11 = {}, a20 = {}, a21 = {}, a30 = {}, a31 = {};
      for (int64_t x = 0; x < d; ++x) {
        const V8 k0 = load8(kt + x * kBk + c0), k1 = load8(kt + x * kBk + c0 + kVw);
        const float b0 = q0[x], b1 = q0[lda + x], b2 = q0[2 * lda + x], b3 = q0[3 * lda + x];
        a00 += b0 * k0;
        a01 += b0 * k1;
        a10 += b1 * k0;
        a11 += b1 * k1;
        a20 += b2 * k0;
        a21 += b2 * k1;
        a30 += b3 * k0;
        a31 += b3 * k1;
      }
      float* o = s + r0 * kBk + c0;
      store8(o, a00);
      store8(o + kVw, a01);
      store8(o + kBk, a10);
      store8(o + kBk + kVw, a11);
      store8(o + 2 * kBk, a20);
      store8(o + 2 * kBk + kVw, a21);
      store8(o + 3 * kBk, a30);
      store8(o + 3 * kBk + kVw, a31);
    }
  }
}

// o[r][y] += sum_c pm[r][c] * vt[c][y] for r < nq (a multiple of kRb), c < nk, y < dvp (a
// multiple of kCb); pm rows are ldp apart, vt and o rows dvp apart.
inline void accumulate_pv(const float* pm, int64_t ldp, const float* vt, float* o, int64_t nq,
                          int64_t nk, int64_t dvp) {
  for (int64_t r0 = 0; r0 < nq; r0 += kRb) {
    const float* p0 = pm + r0 * ldp;
    for (int64_t y0 = 0; y0 < dvp; y0 += kCb) {
      float* o0 = o + r0 * dvp + y0;
      V8 a00 = load8(o0), a01 = load8(o0 + kVw);
      V8 a10 = load8(o0 + dvp), a11 = load8(o0 + dvp + kVw);
      V8 a20 = load8(o0 + 2 * dvp), a21 = load8(o0 + 2 * dvp + kVw);
      V8 a30 = load8(o0 + 3 * dvp), a31 = load8(o0 + 3 * dvp + kVw);
      for (int64_t c = 0; c < nk; ++c) {
        const V8 v0 = load8(vt + c * dvp + y0), v1 = load8(vt + c * dvp + y0 + kVw);
        const float b0 = p0[c], b1 = p0[ldp + c], b2 = p0[2 * ldp + c], b3 = p0[3 * ldp + c];
        a00 += b0 * v0;
        a01 += b0 * v1;
        a10 += b1 * v0;
        a11 += b1 * v1;
        a20 += b2 * v0;
        a21 += b2 * v1;
        a30 += b3 * v0;
        a31 += b3 * v1;
      }
      store8(o0, a00);
      store8(o0 + kVw, a01);
      store8(o0 + dvp, a10);
      store8(o0 + dvp + kVw, a11);
      store8(o0 + 2 * dvp, a20);
      store8(o0 + 2 * dvp + kVw, a21);
      store8(o0 + 3 * dvp, a30);
      store8(o0 + 3 * dvp + kVw, a31);
    }
  }
}

#ifdef RECOPS_HSTU_BF16DP
// AVX512-BF16 microkernels (bf16 inputs only, so packing them is exact): VDPBF16PS multiplies
// pairs of bf16 and adds both products to an fp32 lane, twice the MACs of an fp32 FMA. Operands
// are packed in pairs along the reduction dim: qp[r][x/2] (two bf16 in 32 bits, broadcast),
// kp[x/2][c][2], vp[c/2][y][2], pp[r][c/2] (P rounded to bf16 before P·V, as the spec allows).

// s[r][c] = sum_x q[r][x] k[x][c] for r < nq (a multiple of kRb), c < kBk (= 4 × 16 lanes).
inline void scores_bf16(const uint32_t* qp, int64_t dh, const uint16_t* kp, float* s, int64_t nq) {
  static_assert(kBk == 64, "scores_bf16 holds one 64-key row in 4 zmm registers");
  for (int64_t r0 = 0; r0 < nq; r0 += kRb) {
    __m512 a[kRb][4];
    for (int64_t rr = 0; rr < kRb; ++rr)
      for (int j = 0; j < 4; ++j) a[rr][j] = _mm512_setzero_ps();
    for (int64_t x2 = 0; x2 < dh; ++x2) {
      const uint16_t* kr = kp + x2 * kBk * 2;
      __m512bh kv[4];
      for (int j = 0; j < 4; ++j) kv[j] = (__m512bh)_mm512_loadu_si512(kr + j * 32);
      for (int64_t rr = 0; rr < kRb; ++rr) {
        const __m512bh qb = (__m512bh)_mm512_set1_epi32(static_cast<int>(qp[(r0 + rr) * dh + x2]));
        for (int j = 0; j < 4; ++j) a[rr][j] = _mm512_dpbf16_ps(a[rr][j], qb, kv[j]);
      }
    }
    for (int64_t rr = 0; rr < kRb; ++rr)
      for (int j = 0; j < 4; ++j) _mm512_storeu_ps(s + (r0 + rr) * kBk + j * 16, a[rr][j]);
  }
}

// o[r][y] += sum_c p[r][c] v[c][y] for r < nq (a multiple of kRb), c < nk, y < dvp (of 32).
inline void pv_bf16(const uint32_t* pp, const uint16_t* vp, float* o, int64_t nq, int64_t nk,
                    int64_t dvp) {
  const int64_t nk2 = (nk + 1) / 2;
  for (int64_t r0 = 0; r0 < nq; r0 += kRb) {
    for (int64_t y0 = 0; y0 < dvp; y0 += 32) {
      __m512 a[kRb][2];
      for (int64_t rr = 0; rr < kRb; ++rr)
        for (int j = 0; j < 2; ++j) a[rr][j] = _mm512_loadu_ps(o + (r0 + rr) * dvp + y0 + j * 16);
      for (int64_t c2 = 0; c2 < nk2; ++c2) {
        const uint16_t* vr = vp + (c2 * dvp + y0) * 2;
        const __m512bh v0 = (__m512bh)_mm512_loadu_si512(vr);
        const __m512bh v1 = (__m512bh)_mm512_loadu_si512(vr + 32);
        for (int64_t rr = 0; rr < kRb; ++rr) {
          const __m512bh pb =
              (__m512bh)_mm512_set1_epi32(static_cast<int>(pp[(r0 + rr) * (kBk / 2) + c2]));
          a[rr][0] = _mm512_dpbf16_ps(a[rr][0], pb, v0);
          a[rr][1] = _mm512_dpbf16_ps(a[rr][1], pb, v1);
        }
      }
      for (int64_t rr = 0; rr < kRb; ++rr)
        for (int j = 0; j < 2; ++j) _mm512_storeu_ps(o + (r0 + rr) * dvp + y0 + j * 16, a[rr][j]);
    }
  }
}

#endif

// Per-thread scratch (malloc: no std templates in the ISA-specific copies).
// Whether the custom mask keeps key `key` for query row i (only called when p.mask is set).
inline bool mask_keeps(const P& p, int64_t b, int64_t hq, int64_t i, int64_t key) {
  const int64_t hm = p.mask_s[1] == 0 ? 0 : hq;
  const int64_t at = b * p.mask_s[0] + hm * p.mask_s[1] + i * p.mask_s[2] + key * p.mask_s[3];
  return p.mask_dtype == DType::boolean ? static_cast<const uint8_t*>(p.mask)[at] != 0
                                        : load_f(p.mask, p.mask_dtype, at) != 0.0f;
}

// Whether query row i attends to key `key`: inside one of its intervals and kept by the mask.
inline bool attends(const P& p, const Interval* riv, int niv, int64_t b, int64_t hq, int64_t i,
                    int64_t key) {
  bool in = false;
  for (int j = 0; j < niv && !in; ++j) in = riv[j].lo <= key && key < riv[j].hi;
  return in && (!p.mask || mask_keeps(p, b, hq, i, key));
}

// Value rows holding NaN or ±inf are added apart, for the rows that attend to them only, and then
// zeroed in the tile, and their column of P with them: the microkernels multiply masked entries
// by P = 0, and 0·NaN would poison rows the reference leaves finite (masking selects, it does not
// multiply); an infinite P (SiLU(inf)) would meet the zeroed row as inf·0. `vget(c, y)` reads and
// `vzero(c)` clears value row c of the tile. Rare (non-finite data), so plain loops.
template <class Get, class Zero>
inline void add_nonfinite_values(const P& p, float* s, const Interval* iv, const int* niv,
                                 int64_t max_iv, float* acc, int64_t b, int64_t hq, int64_t i0,
                                 int64_t c0, int64_t nq, int64_t nk, int64_t dv, int64_t dvp,
                                 Get vget, Zero vzero) {
  for (int64_t c = 0; c < nk; ++c) {
    bool bad = false;
    for (int64_t y = 0; y < dv; ++y) bad |= !std::isfinite(vget(c, y));
    if (!bad) continue;
    for (int64_t r = 0; r < nq; ++r) {
      if (!attends(p, iv + r * max_iv, niv[r], b, hq, i0 + r, c0 + c)) continue;
      for (int64_t y = 0; y < dv; ++y) acc[r * dvp + y] += s[r * kBk + c] * vget(c, y);
    }
    for (int64_t r = 0; r < nq; ++r) s[r * kBk + c] = 0.0f;
    vzero(c);
  }
}

struct Scratch {
  float* qt;   // [kBq][d]        query tile (fp32)
  float* kt;   // [d][kBk]        key tile, transposed
  float* vt;   // [kBk][dvp]      value tile, dv padded to kCb
  float* s;    // [kBq][kBk]      scores, then P
  float* acc;  // [kBq][dvp]      output accumulator
  Interval* iv;
  int* niv;
  float* row;  // [d]  one key row, fp32, before its transposition
#ifdef RECOPS_HSTU_BF16DP
  uint32_t* qp;  // [kBq][dh]        queries as bf16 pairs
  uint16_t* kp;  // [dh][kBk][2]     keys, pairs along d
  uint16_t* vp;  // [kBk/2][dvp][2]  values, pairs along keys
  uint32_t* pp;  // [kBq][kBk/2]     P as bf16 pairs
#endif
};

Status fwd_tiled(const HstuAttnParams& p, const Context& ctx) {
  // Work items in a fixed order; each writes its own output rows.
  int64_t n_items = 0;
  for (int64_t b = 0; b < p.B; ++b) n_items += p.Hq * ((p.len_q(b) + kBq - 1) / kBq);
  auto* items = static_cast<Item*>(std::malloc(sizeof(Item) * static_cast<size_t>(n_items + 1)));
  if (!items) return Status(StatusCode::internal, "hstu_attn_fwd: out of host memory");
  int64_t n = 0;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t hq = 0; hq < p.Hq; ++hq)
      for (int64_t i0 = 0; i0 < p.len_q(b); i0 += kBq) items[n++] = {b, hq, i0};
  const int64_t group = p.Hq / p.Hk;
  const int64_t max_iv = (p.nfunc + 1) / 2 + 2;
  const int64_t d = p.d, dv = p.dv, dvp = (dv + kCb - 1) / kCb * kCb;
  const float alpha = static_cast<float>(p.alpha);
  const int nt = core::max_threads(ctx.num_threads, n);  // no more threads than tiles
  bool oom = false;

#pragma omp parallel num_threads(nt)
  {
    Scratch w;
    w.qt = static_cast<float*>(std::calloc(static_cast<size_t>(kBq * (d + 1)), sizeof(float)));
    w.kt = static_cast<float*>(std::calloc(static_cast<size_t>((d + 1) * kBk), sizeof(float)));
    w.vt = static_cast<float*>(std::calloc(static_cast<size_t>(kBk * dvp + 1), sizeof(float)));
    w.s = static_cast<float*>(std::calloc(static_cast<size_t>(kBq * kBk), sizeof(float)));
    w.acc = static_cast<float*>(std::calloc(static_cast<size_t>(kBq * dvp + 1), sizeof(float)));
    w.iv =
        static_cast<Interval*>(std::malloc(sizeof(Interval) * static_cast<size_t>(kBq * max_iv)));
    w.niv = static_cast<int*>(std::malloc(sizeof(int) * kBq));
    w.row = static_cast<float*>(std::calloc(static_cast<size_t>(d + 1), sizeof(float)));
    bool ok = w.qt && w.kt && w.vt && w.s && w.acc && w.iv && w.niv && w.row;
#ifdef RECOPS_HSTU_BF16DP
    const int64_t dh = (d + 1) / 2;
    w.qp = static_cast<uint32_t*>(std::calloc(static_cast<size_t>(kBq * dh + 1), 4));
    w.kp = static_cast<uint16_t*>(std::calloc(static_cast<size_t>(dh * kBk * 2 + 1), 2));
    w.vp = static_cast<uint16_t*>(std::calloc(static_cast<size_t>(kBk * dvp + 1), 2));
    w.pp = static_cast<uint32_t*>(std::calloc(static_cast<size_t>(kBq * kBk / 2), 4));
    ok = ok && w.qp && w.kp && w.vp && w.pp;
#endif
    if (!ok) {
#pragma omp atomic write
      oom = true;
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < n_items; ++it) {
      if (!ok) continue;
      const Item item = items[it];
      const int64_t b = item.b, hq = item.hq, i0 = item.i0;
      const int64_t Lq = p.len_q(b), Lk = p.len_k(b), cached = p.len_cached(b);
      const int64_t page0 =
          p.kv_cache ? P::load(p.page_offsets, p.page_offsets_int64, p.page_offsets_stride, b) : 0;
      const int64_t kh = hq / group, nq = Lq - i0 < kBq ? Lq - i0 : kBq;
      const int64_t nqp = (nq + kRb - 1) / kRb * kRb;  // rows padded for the microkernels
      const int64_t q_row0 = p.q_start(b) + i0;
      // Row intervals and the key range the tile touches at all.
      int64_t k_lo = Lk, k_hi = 0;
      for (int64_t r = 0; r < nq; ++r) {
        Interval* riv = w.iv + r * max_iv;
        w.niv[r] = row_intervals(p, b, hq, i0 + r, Lq, Lk, riv);
        for (int j = 0; j < w.niv[r]; ++j) {
          k_lo = riv[j].lo < k_lo ? riv[j].lo : k_lo;
          k_hi = riv[j].hi > k_hi ? riv[j].hi : k_hi;
        }
      }
      std::memset(w.acc, 0, sizeof(float) * static_cast<size_t>(nqp * dvp));
#ifdef RECOPS_HSTU_BF16DP
      // bf16 inputs: the query rows are copied bit for bit into pairs.
      std::memset(w.qp, 0, sizeof(uint32_t) * static_cast<size_t>(nqp * dh));
      for (int64_t r = 0; r < nq; ++r) {
        const int64_t off = p.q_batch * b + (q_row0 + r) * p.q_row + hq * p.q_head;
        std::memcpy(w.qp + r * dh, static_cast<const uint16_t*>(p.q) + off,
                    sizeof(uint16_t) * static_cast<size_t>(d));
      }
#else
      std::memset(w.qt, 0, sizeof(float) * static_cast<size_t>(nqp * d));
      for (int64_t r = 0; r < nq; ++r) {
        const int64_t off = p.q_batch * b + (q_row0 + r) * p.q_row + hq * p.q_head;
        load_row(p.q, p.dtype, off, w.qt + r * d, d);
      }
#endif
      for (int64_t c0 = (k_lo / kBk) * kBk; c0 < k_hi; c0 += kBk) {
        const int64_t nk = Lk - c0 < kBk ? Lk - c0 : kBk;
        // Skip a key tile no row's intervals meet.
        bool any = false;
        for (int64_t r = 0; r < nq && !any; ++r)
          for (int j = 0; j < w.niv[r] && !any; ++j) {
            const Interval& in = w.iv[r * max_iv + j];
            any = in.lo < c0 + nk && in.hi > c0;
          }
        if (!any) continue;
#ifdef RECOPS_HSTU_BF16DP
        // Keys as 32-bit pairs along d (a transpose of words), values interleaved by key pairs.
        if (nk < kBk) std::memset(w.kp, 0, sizeof(uint32_t) * static_cast<size_t>(dh * kBk));
        if (nk < kBk || dvp != dv)
          std::memset(w.vp, 0, sizeof(uint16_t) * static_cast<size_t>(kBk * dvp));
        auto* kp32 = reinterpret_cast<uint32_t*>(w.kp);
        for (int64_t c = 0; c < nk; ++c) {
          const KeyRow kr = key_row(p, b, kh, c0 + c, cached, page0);
          const uint16_t* ks = static_cast<const uint16_t*>(kr.k) + kr.k_off;
          for (int64_t x2 = 0; x2 < d / 2; ++x2) {
            uint32_t wd;
            std::memcpy(&wd, ks + 2 * x2, sizeof wd);
            kp32[x2 * kBk + c] = wd;
          }
          if (d % 2) kp32[(dh - 1) * kBk + c] = ks[d - 1];
          const uint16_t* vs = static_cast<const uint16_t*>(kr.v) + kr.v_off;
          uint16_t* vd = w.vp + (c / 2) * dvp * 2 + (c & 1);
          for (int64_t y = 0; y < dv; ++y) vd[2 * y] = vs[y];
        }
        scores_bf16(w.qp, dh, w.kp, w.s, nqp);
#else
        if (nk < kBk) {  // a partial tile: zero the unused key columns and value rows
          for (int64_t x = 0; x < d; ++x)
            std::memset(w.kt + x * kBk + nk, 0, sizeof(float) * static_cast<size_t>(kBk - nk));
        }
        std::memset(w.vt, 0, sizeof(float) * static_cast<size_t>(kBk * dvp));
        for (int64_t c = 0; c < nk; ++c) {
          const KeyRow kr = key_row(p, b, kh, c0 + c, cached, page0);
          load_row(kr.k, p.dtype, kr.k_off, w.row, d);
          for (int64_t x = 0; x < d; ++x) w.kt[x * kBk + c] = w.row[x];
          load_row(kr.v, p.dtype, kr.v_off, w.vt + c * dvp, dv);
        }
        scores(w.qt, d, w.kt, w.s, nqp, d);
#endif
        // P = M ⊙ SiLU(alpha (S + rab)); masked entries are exactly 0.
        for (int64_t r = 0; r < nqp; ++r) {
          float* srow = w.s + r * kBk;
          if (r >= nq) {
            std::memset(srow, 0, sizeof(float) * kBk);
            continue;
          }
          const int64_t i = i0 + r;
          if (p.rab) {
            const int64_t hr = p.rab_heads == 1 ? 0 : hq;
            const int64_t ro = b * p.rab_s[0] + hr * p.rab_s[1] + i * p.rab_s[2];
            for (int64_t c = 0; c < nk; ++c)
              srow[c] += load_f(p.rab, p.dtype, ro + (c0 + c) * p.rab_s[3]);
          }
          for (int64_t c = 0; c < kBk; c += kVw) store8(srow + c, silu8(alpha * load8(srow + c)));
          // Zero everything outside the row's intervals (and past Lk).
          const Interval* riv = w.iv + r * max_iv;
          int64_t from = 0;  // first column not yet known to be kept or zeroed
          for (int j = 0; j < w.niv[r]; ++j) {
            int64_t lo = riv[j].lo - c0, hi = riv[j].hi - c0;
            lo = lo < 0 ? 0 : (lo > nk ? nk : lo);
            hi = hi < 0 ? 0 : (hi > nk ? nk : hi);
            if (hi <= lo) continue;
            for (int64_t c = from; c < lo; ++c) srow[c] = 0.0f;
            from = hi > from ? hi : from;
          }
          for (int64_t c = from; c < kBk; ++c) srow[c] = 0.0f;
          if (p.mask)
            for (int64_t c = 0; c < nk; ++c)
              if (!mask_keeps(p, b, hq, i, c0 + c)) srow[c] = 0.0f;
        }
#ifdef RECOPS_HSTU_BF16DP
        add_nonfinite_values(
            p, w.s, w.iv, w.niv, max_iv, w.acc, b, hq, i0, c0, nq, nk, dv, dvp,
            [&](int64_t c, int64_t y) {
              const uint32_t bits = uint32_t{w.vp[(c / 2) * dvp * 2 + (c & 1) + 2 * y]} << 16;
              float f;
              std::memcpy(&f, &bits, sizeof f);
              return f;
            },
            [&](int64_t c) {
              for (int64_t y = 0; y < dv; ++y) w.vp[(c / 2) * dvp * 2 + (c & 1) + 2 * y] = 0;
            });
        // P to bf16 (round to nearest even): 16 floats become 8 pairs of consecutive keys.
        for (int64_t r = 0; r < nqp; ++r)
          for (int64_t c = 0; c < kBk; c += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(w.pp + r * (kBk / 2) + c / 2),
                                (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(w.s + r * kBk + c)));
        pv_bf16(w.pp, w.vp, w.acc, nqp, nk, dvp);
#else
        add_nonfinite_values(
            p, w.s, w.iv, w.niv, max_iv, w.acc, b, hq, i0, c0, nq, nk, dv, dvp,
            [&](int64_t c, int64_t y) { return w.vt[c * dvp + y]; },
            [&](int64_t c) {
              std::memset(w.vt + c * dvp, 0, sizeof(float) * static_cast<size_t>(dv));
            });
        accumulate_pv(w.s, kBk, w.vt, w.acc, nqp, nk, dvp);
#endif
      }
      for (int64_t r = 0; r < nq; ++r) {
        const int64_t i = i0 + r;
        const float scale = p.attn_scale ? p.attn_scale[p.q_token(b, i) * p.attn_scale_stride]
                                         : static_cast<float>(p.silu_scale);
        const int64_t off = p.o_batch * b + (q_row0 + r) * p.o_row + hq * p.o_head;
        for (int64_t y = 0; y < dv; ++y)
          store_f(p.out, p.dtype, off + y, w.acc[r * dvp + y] * scale);
      }
    }
    std::free(w.qt);
    std::free(w.kt);
    std::free(w.vt);
    std::free(w.s);
    std::free(w.acc);
    std::free(w.iv);
    std::free(w.niv);
    std::free(w.row);
#ifdef RECOPS_HSTU_BF16DP
    std::free(w.qp);
    std::free(w.kp);
    std::free(w.vp);
    std::free(w.pp);
#endif
  }
  std::free(items);
  if (oom) return Status(StatusCode::internal, "hstu_attn_fwd: out of host memory (tile scratch)");
  return Status::Ok();
}

}  // namespace
}  // namespace recops::ops
