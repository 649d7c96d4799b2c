// hstu_attn/cpu/bwd_kernel.h: the tiled, deterministic CPU backward (included after
// fwd_kernel.h by the same per-ISA files; internal linkage for the same reason).
//
// Two passes, each recomputing S = α(QKᵀ + rab), P and G = SiLU'(S) ⊙ dP tile by tile, with
// dP = (s ⊙ dO) Vᵀ; no atomics, every output element has one owner and a fixed summation order:
//   pass A, work item (sequence, query tile, head — or every head when a head-broadcast rab wants
//           drab, so that the head sum stays inside the item): dQ = α G K and drab = α G;
//   pass B, work item (sequence, key head, key tile): dV = Pᵀ (s ⊙ dO) and dK = α Gᵀ Q, summed
//           over the query heads of the GQA group and the query tiles in order.
// Memory stays O(tile) per thread, as in the forward.
#pragma once

namespace recops::ops {
namespace {

// Scratch of one thread in the backward (malloc'd, freed at the end of the parallel region).
struct BwdScratch {
  float* qt;   // [kBq][dp]   queries, fp32
  float* dot;  // [kBq][dvp]  s_i · dO_i, fp32
  float* kt;   // [dp][kBk]   keys, transposed
  float* krm;  // [kBk][dp]   keys, row-major
  float* vtt;  // [dvp][kBk]  values, transposed
  float* pm;   // [kBq][kBk]  P
  float* gm;   // [kBq][kBk]  G
  float* tr;   // [kBk][kBq]  Pᵀ or Gᵀ
  float* rab;  // [kBq][kBk]  drab tile (pass A)
  float* acc;  // [heads][kBq][dp] dQ (pass A), or [kBk][dp] dK + [kBk][dvp] dV (pass B)
  Interval* iv;
  int* niv;
};

float* falloc(int64_t n) {
  return static_cast<float*>(std::calloc(static_cast<size_t>(n > 0 ? n : 1), sizeof(float)));
}

// Loads key rows [c0, c0 + nk) of sequence b, head kh (new tokens only: no cache in the backward)
// into kt (transposed), krm (row-major) and vtt (transposed); columns past nk are zero.
void load_keys(const P& p, int64_t b, int64_t kh, int64_t c0, int64_t nk, int64_t dp, int64_t dvp,
               const BwdScratch& w) {
  std::memset(w.kt, 0, sizeof(float) * static_cast<size_t>(dp * kBk));
  std::memset(w.krm, 0, sizeof(float) * static_cast<size_t>(kBk * dp));
  std::memset(w.vtt, 0, sizeof(float) * static_cast<size_t>(dvp * kBk));
  for (int64_t c = 0; c < nk; ++c) {
    const KeyRow kr = key_row(p, b, kh, c0 + c, 0, 0);
    float* krow = w.krm + c * dp;
    load_row(kr.k, p.dtype, kr.k_off, krow, p.d);
    for (int64_t x = 0; x < p.d; ++x) w.kt[x * kBk + c] = krow[x];
    for (int64_t y = 0; y < p.dv; ++y) w.vtt[y * kBk + c] = load_f(kr.v, p.dtype, kr.v_off + y);
  }
}

// Loads query rows i0 .. i0 + nq of (b, hq) into qt and s_i · dO_i into dot; padded rows are 0.
void load_queries(const P& p, int64_t b, int64_t hq, int64_t i0, int64_t nq, int64_t nqp,
                  int64_t dp, int64_t dvp, const BwdScratch& w) {
  std::memset(w.qt, 0, sizeof(float) * static_cast<size_t>(nqp * dp));
  std::memset(w.dot, 0, sizeof(float) * static_cast<size_t>(nqp * dvp));
  const int64_t row0 = p.q_start(b) + i0;
  for (int64_t r = 0; r < nq; ++r) {
    const int64_t qo = p.q_batch * b + (row0 + r) * p.q_row + hq * p.q_head;
    load_row(p.q, p.dtype, qo, w.qt + r * dp, p.d);
    const float scale = p.attn_scale ? p.attn_scale[p.q_token(b, i0 + r) * p.attn_scale_stride]
                                     : static_cast<float>(p.silu_scale);
    const int64_t oo = p.do_batch * b + (row0 + r) * p.do_row + hq * p.do_head;
    float* drow = w.dot + r * dvp;
    load_row(p.dout, p.dtype, oo, drow, p.dv);
    for (int64_t y = 0; y < p.dv; ++y) drow[y] *= scale;
  }
}

// True when some row's intervals meet keys [c0, c0 + nk).
bool tile_live(const Interval* iv, const int* niv, int64_t nq, int64_t max_iv, int64_t c0,
               int64_t nk) {
  for (int64_t r = 0; r < nq; ++r)
    for (int j = 0; j < niv[r]; ++j)
      if (iv[r * max_iv + j].lo < c0 + nk && iv[r * max_iv + j].hi > c0) return true;
  return false;
}

// P and G (without α) of query tile (b, hq, i0, nq) against key tile (c0, nk): masked entries,
// padded rows and columns past nk are exactly 0.
void p_and_g(const P& p, int64_t b, int64_t hq, int64_t i0, int64_t nq, int64_t nqp, int64_t c0,
             int64_t nk, int64_t dp, int64_t dvp, const Interval* iv, const int* niv,
             int64_t max_iv, const BwdScratch& w) {
  const float alpha = static_cast<float>(p.alpha);
  scores(w.qt, dp, w.kt, w.pm, nqp, p.d);      // Q Kᵀ
  scores(w.dot, dvp, w.vtt, w.gm, nqp, p.dv);  // dP = (s ⊙ dO) Vᵀ
  for (int64_t r = 0; r < nqp; ++r) {
    float* prow = w.pm + r * kBk;
    float* grow = w.gm + r * kBk;
    if (r >= nq) {
      std::memset(prow, 0, sizeof(float) * kBk);
      std::memset(grow, 0, sizeof(float) * kBk);
      continue;
    }
    const int64_t i = i0 + r;
    if (p.rab) {
      const int64_t hr = p.rab_heads == 1 ? 0 : hq;
      const int64_t ro = b * p.rab_s[0] + hr * p.rab_s[1] + i * p.rab_s[2];
      for (int64_t c = 0; c < nk; ++c)
        prow[c] += load_f(p.rab, p.dtype, ro + (c0 + c) * p.rab_s[3]);
    }
    const V8 one = V8{} + 1.0f;
    for (int64_t c = 0; c < kBk; c += kVw) {
      const V8 x = alpha * load8(prow + c);
      const V8 sg = sigmoid8(x);
      store8(prow + c, x * sg);
      store8(grow + c, sg * (one + x * (one - sg)) * load8(grow + c));
    }
    const Interval* riv = iv + r * max_iv;
    int64_t from = 0;
    for (int j = 0; j < niv[r]; ++j) {
      int64_t lo = riv[j].lo - c0, hi = riv[j].hi - c0;
      lo = lo < 0 ? 0 : (lo > nk ? nk : lo);
      hi = hi < 0 ? 0 : (hi > nk ? nk : hi);
      if (hi <= lo) continue;
      for (int64_t c = from; c < lo; ++c) prow[c] = grow[c] = 0.0f;
      from = hi > from ? hi : from;
    }
    for (int64_t c = from; c < kBk; ++c) prow[c] = grow[c] = 0.0f;
    if (p.mask) {
      const int64_t hm = p.mask_s[1] == 0 ? 0 : hq;
      const int64_t mo = b * p.mask_s[0] + hm * p.mask_s[1] + i * p.mask_s[2];
      for (int64_t c = 0; c < nk; ++c) {
        const int64_t at = mo + (c0 + c) * p.mask_s[3];
        const bool keep = p.mask_dtype == DType::boolean
                              ? static_cast<const uint8_t*>(p.mask)[at] != 0
                              : load_f(p.mask, p.mask_dtype, at) != 0.0f;
        if (!keep) prow[c] = grow[c] = 0.0f;
      }
    }
  }
}

// m [nqp][kBk] -> t [kBk][kBq] (rows past nqp of the source are not read).
void transpose(const float* m, float* t, int64_t nqp) {
  for (int64_t c = 0; c < kBk; ++c)
    for (int64_t r = 0; r < nqp; ++r) t[c * kBq + r] = m[r * kBk + c];
}

Status bwd_tiled(const HstuAttnParams& p, const Context& ctx) {
  const int64_t d = p.d, dv = p.dv;
  const int64_t dp = (d + kCb - 1) / kCb * kCb, dvp = (dv + kCb - 1) / kCb * kCb;
  const int64_t group = p.Hq / p.Hk, max_iv = (p.nfunc + 1) / 2 + 2;
  const bool head_sum = p.drab && p.rab_heads == 1;  // pass A items own every head
  const int64_t heads_a = head_sum ? p.Hq : 1;
  const float alpha = static_cast<float>(p.alpha);
  // drab: every element is written; pass A overwrites the tiles it visits.
  if (p.drab) {
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.rab_heads; ++h)
        for (int64_t i = 0; i < p.Sq; ++i)
          for (int64_t c = 0; c < p.Sk; ++c)
            store_f(p.drab, p.dtype,
                    b * p.drab_s[0] + h * p.drab_s[1] + i * p.drab_s[2] + c * p.drab_s[3], 0.0f);
  }
  // Work lists (fixed order).
  int64_t na = 0, nb = 0;
  for (int64_t b = 0; b < p.B; ++b) {
    na += (p.Hq / heads_a) * ((p.len_q(b) + kBq - 1) / kBq);
    nb += p.Hk * ((p.len_k(b) + kBk - 1) / kBk);
  }
  auto* items_a = static_cast<Item*>(std::malloc(sizeof(Item) * static_cast<size_t>(na + 1)));
  auto* items_b = static_cast<Item*>(std::malloc(sizeof(Item) * static_cast<size_t>(nb + 1)));
  if (!items_a || !items_b) {
    std::free(items_a);
    std::free(items_b);
    return Status(StatusCode::internal, "hstu_attn_bwd: out of host memory");
  }
  na = nb = 0;
  for (int64_t b = 0; b < p.B; ++b) {
    for (int64_t h = 0; h < p.Hq; h += heads_a)
      for (int64_t i0 = 0; i0 < p.len_q(b); i0 += kBq) items_a[na++] = {b, h, i0};
    for (int64_t kh = 0; kh < p.Hk; ++kh)
      for (int64_t c0 = 0; c0 < p.len_k(b); c0 += kBk) items_b[nb++] = {b, kh, c0};
  }
  // No more threads than the larger pass has tiles (each thread allocates its scratch).
  const int nt = core::max_threads(ctx.num_threads, std::max(na, nb));
  bool oom = false;

#pragma omp parallel num_threads(nt)
  {
    BwdScratch w;
    w.qt = falloc(kBq * dp);
    w.dot = falloc(kBq * dvp);
    w.kt = falloc(dp * kBk);
    w.krm = falloc(kBk * dp);
    w.vtt = falloc(dvp * kBk);
    w.pm = falloc(kBq * kBk);
    w.gm = falloc(kBq * kBk);
    w.tr = falloc(kBk * kBq);
    w.rab = falloc(kBq * kBk);
    const int64_t acc_n =
        heads_a * kBq * dp > kBk * (dp + dvp) ? heads_a * kBq * dp : kBk * (dp + dvp);
    w.acc = falloc(acc_n);
    w.iv = static_cast<Interval*>(
        std::malloc(sizeof(Interval) * static_cast<size_t>(heads_a * kBq * max_iv)));
    w.niv = static_cast<int*>(std::malloc(sizeof(int) * static_cast<size_t>(heads_a * kBq)));
    const bool ok = w.qt && w.dot && w.kt && w.krm && w.vtt && w.pm && w.gm && w.tr && w.rab &&
                    w.acc && w.iv && w.niv;
    if (!ok) {
#pragma omp atomic write
      oom = true;
    }
    // ---- pass A: dQ and drab ----
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < na; ++it) {
      if (!ok) continue;
      const Item item = items_a[it];
      const int64_t b = item.b, h0 = item.hq, i0 = item.i0;
      const int64_t Lq = p.len_q(b), Lk = p.len_k(b);
      const int64_t nq = Lq - i0 < kBq ? Lq - i0 : kBq, nqp = (nq + kRb - 1) / kRb * kRb;
      int64_t k_lo = Lk, k_hi = 0;
      for (int64_t h = 0; h < heads_a; ++h)
        for (int64_t r = 0; r < nq; ++r) {
          Interval* riv = w.iv + (h * kBq + r) * max_iv;
          w.niv[h * kBq + r] = row_intervals(p, b, h0 + h, i0 + r, Lq, Lk, riv);
          for (int j = 0; j < w.niv[h * kBq + r]; ++j) {
            k_lo = riv[j].lo < k_lo ? riv[j].lo : k_lo;
            k_hi = riv[j].hi > k_hi ? riv[j].hi : k_hi;
          }
        }
      std::memset(w.acc, 0, sizeof(float) * static_cast<size_t>(heads_a * kBq * dp));
      int64_t loaded_kh = -1;
      for (int64_t c0 = (k_lo / kBk) * kBk; c0 < k_hi; c0 += kBk) {
        const int64_t nk = Lk - c0 < kBk ? Lk - c0 : kBk;
        if (p.drab) std::memset(w.rab, 0, sizeof(float) * static_cast<size_t>(kBq * kBk));
        bool any_head = false;
        loaded_kh = -1;
        for (int64_t h = 0; h < heads_a; ++h) {
          const int64_t hq = h0 + h, kh = hq / group;
          const Interval* iv = w.iv + h * kBq * max_iv;
          const int* niv = w.niv + h * kBq;
          if (!tile_live(iv, niv, nq, max_iv, c0, nk)) continue;
          any_head = true;
          if (kh != loaded_kh) {
            load_keys(p, b, kh, c0, nk, dp, dvp, w);
            loaded_kh = kh;
          }
          load_queries(p, b, hq, i0, nq, nqp, dp, dvp, w);
          p_and_g(p, b, hq, i0, nq, nqp, c0, nk, dp, dvp, iv, niv, max_iv, w);
          accumulate_pv(w.gm, kBk, w.krm, w.acc + h * kBq * dp, nqp, nk, dp);
          if (p.drab)
            for (int64_t e = 0; e < nqp * kBk; ++e) w.rab[e] += alpha * w.gm[e];
        }
        if (p.drab && any_head) {
          const int64_t hr = head_sum ? 0 : h0;
          for (int64_t r = 0; r < nq; ++r)
            for (int64_t c = 0; c < nk; ++c)
              store_f(p.drab, p.dtype,
                      b * p.drab_s[0] + hr * p.drab_s[1] + (i0 + r) * p.drab_s[2] +
                          (c0 + c) * p.drab_s[3],
                      w.rab[r * kBk + c]);
        }
      }
      const int64_t row0 = p.q_start(b) + i0;
      for (int64_t h = 0; h < heads_a; ++h)
        for (int64_t r = 0; r < nq; ++r) {
          const int64_t o = p.dq_batch * b + (row0 + r) * p.dq_row + (h0 + h) * p.dq_head;
          for (int64_t x = 0; x < d; ++x)
            store_f(p.dq, p.dtype, o + x, alpha * w.acc[(h * kBq + r) * dp + x]);
        }
    }
    // ---- pass B: dK and dV ----
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < nb; ++it) {
      if (!ok) continue;
      const Item item = items_b[it];
      const int64_t b = item.b, kh = item.hq, c0 = item.i0;
      const int64_t Lq = p.len_q(b), Lk = p.len_k(b);
      const int64_t nk = Lk - c0 < kBk ? Lk - c0 : kBk;
      float* dk_acc = w.acc;             // [kBk][dp]
      float* dv_acc = w.acc + kBk * dp;  // [kBk][dvp]
      std::memset(w.acc, 0, sizeof(float) * static_cast<size_t>(kBk * (dp + dvp)));
      load_keys(p, b, kh, c0, nk, dp, dvp, w);
      for (int64_t hq = kh * group; hq < (kh + 1) * group; ++hq) {
        for (int64_t i0 = 0; i0 < Lq; i0 += kBq) {
          const int64_t nq = Lq - i0 < kBq ? Lq - i0 : kBq, nqp = (nq + kRb - 1) / kRb * kRb;
          for (int64_t r = 0; r < nq; ++r)
            w.niv[r] = row_intervals(p, b, hq, i0 + r, Lq, Lk, w.iv + r * max_iv);
          if (!tile_live(w.iv, w.niv, nq, max_iv, c0, nk)) continue;
          load_queries(p, b, hq, i0, nq, nqp, dp, dvp, w);
          p_and_g(p, b, hq, i0, nq, nqp, c0, nk, dp, dvp, w.iv, w.niv, max_iv, w);
          transpose(w.pm, w.tr, nqp);
          accumulate_pv(w.tr, kBq, w.dot, dv_acc, kBk, nqp, dvp);
          transpose(w.gm, w.tr, nqp);
          accumulate_pv(w.tr, kBq, w.qt, dk_acc, kBk, nqp, dp);
        }
      }
      const int64_t row0 = p.k_start(b) + c0;
      for (int64_t c = 0; c < nk; ++c) {
        const int64_t ko = p.dk_batch * b + (row0 + c) * p.dk_row + kh * p.dk_head;
        for (int64_t x = 0; x < d; ++x) store_f(p.dk, p.dtype, ko + x, alpha * dk_acc[c * dp + x]);
        const int64_t vo = p.dv_batch * b + (row0 + c) * p.dv_row + kh * p.dv_head;
        for (int64_t y = 0; y < dv; ++y) store_f(p.dv_out, p.dtype, vo + y, dv_acc[c * dvp + y]);
      }
    }
    std::free(w.qt);
    std::free(w.dot);
    std::free(w.kt);
    std::free(w.krm);
    std::free(w.vtt);
    std::free(w.pm);
    std::free(w.gm);
    std::free(w.tr);
    std::free(w.rab);
    std::free(w.acc);
    std::free(w.iv);
    std::free(w.niv);
  }
  std::free(items_a);
  std::free(items_b);
  if (oom) return Status(StatusCode::internal, "hstu_attn_bwd: out of host memory (tile scratch)");
  return Status::Ok();
}

}  // namespace
}  // namespace recops::ops
