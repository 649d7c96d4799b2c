// hstu_attn/cpu: the tiled CPU forward. Work items are (sequence, query head, query tile of kBq
// rows); threads take them dynamically (each item is independent, so results do not depend on
// the schedule). Per item, key tiles of kBk keys stream through: K is converted to fp32 and
// transposed ([d][kBk]) so that the score row S[i, :] = sum_x q[i, x] * kT[x, :] vectorises over
// keys without reassociating a sum; P·V accumulates into fp32 rows [kBq][dv] the same way. The
// [S, S] score matrix never exists: memory is O(kBq·kBk + kBk·(d + dv) + kBq·(d + dv)) per thread.
//
// The mask of one query row is a short list of key intervals (spec §3 rules as ranges; the
// custom mask tensor adds an element test). A key tile that meets no row's interval is skipped
// before any arithmetic (causal upper triangle, outside the window, other target groups).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "ops/hstu_attn/impls.h"

namespace recops::ops {
namespace {

using P = HstuAttnParams;
constexpr int64_t kBq = 32;
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

struct Interval {
  int64_t lo, hi;  // keys [lo, hi)
};

// The valid keys of query row i as at most `max_iv` intervals (spec §3; custom mask: [0, Lk)
// with an element test later). Returns the count written.
int row_intervals(const P& p, int64_t b, int64_t hq, int64_t i, int64_t Lq, int64_t Lk,
                  Interval* iv) {
  int n = 0;
  auto add = [&](int64_t lo, int64_t hi) {
    lo = std::max<int64_t>(lo, 0);
    hi = std::min(hi, Lk);
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
    add(lo, std::min(hi, h));
    add(std::max(lo, h + g * p.group_size), hi);
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

}  // namespace

std::string hstu_attn_fwd_cpu_accepts(const HstuAttnParams& p) {
  if (p.dtype == DType::fp64) return "fp64 storage (fp32 accumulation only); the reference runs it";
  if (p.nfunc > 63) return "func with more than 63 entries (interval buffer); use reference";
  return {};
}

Status hstu_attn_fwd_cpu(const HstuAttnParams& p, const Context& ctx) {
  std::vector<Item> items;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t hq = 0; hq < p.Hq; ++hq)
      for (int64_t i0 = 0; i0 < p.len_q(b); i0 += kBq) items.push_back({b, hq, i0});
  const int64_t n_items = static_cast<int64_t>(items.size());
  const int64_t group = p.Hq / p.Hk;
  const int max_iv = static_cast<int>(std::max<int64_t>(2, (p.nfunc + 1) / 2 + 1));
  const float alpha = static_cast<float>(p.alpha);
  const int nt = core::max_threads(ctx.num_threads);

#pragma omp parallel num_threads(nt)
  {
    std::vector<float> qt(static_cast<size_t>(kBq * p.d));        // [kBq][d]
    std::vector<float> kt(static_cast<size_t>(p.d * kBk));        // [d][kBk] (transposed)
    std::vector<float> vt(static_cast<size_t>(kBk * p.dv));       // [kBk][dv]
    std::vector<float> s(static_cast<size_t>(kBq * kBk));         // [kBq][kBk]
    std::vector<float> acc(static_cast<size_t>(kBq * p.dv));      // [kBq][dv]
    std::vector<Interval> iv(static_cast<size_t>(kBq * max_iv));  // per row
    std::vector<int> niv(kBq);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < n_items; ++it) {
      const auto [b, hq, i0] = items[static_cast<size_t>(it)];
      const int64_t Lq = p.len_q(b), Lk = p.len_k(b), cached = p.len_cached(b);
      const int64_t page0 =
          p.kv_cache ? P::load(p.page_offsets, p.page_offsets_int64, p.page_offsets_stride, b) : 0;
      const int64_t kh = hq / group, nq = std::min(kBq, Lq - i0);
      const int64_t q_row0 = p.q_start(b) + i0;
      // Row intervals and the key range the tile touches at all.
      int64_t k_lo = Lk, k_hi = 0;
      for (int64_t r = 0; r < nq; ++r) {
        niv[r] = row_intervals(p, b, hq, i0 + r, Lq, Lk, &iv[static_cast<size_t>(r * max_iv)]);
        for (int j = 0; j < niv[r]; ++j) {
          k_lo = std::min(k_lo, iv[static_cast<size_t>(r * max_iv + j)].lo);
          k_hi = std::max(k_hi, iv[static_cast<size_t>(r * max_iv + j)].hi);
        }
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t r = 0; r < nq; ++r) {
        const int64_t off = p.q_batch * b + (q_row0 + r) * p.q_row + hq * p.q_head;
        for (int64_t x = 0; x < p.d; ++x)
          qt[static_cast<size_t>(r * p.d + x)] = load_f(p.q, p.dtype, off + x);
      }
      for (int64_t c0 = (k_lo / kBk) * kBk; c0 < k_hi; c0 += kBk) {
        const int64_t nk = std::min(kBk, Lk - c0);
        // Skip a key tile no row's intervals meet.
        bool any = false;
        for (int64_t r = 0; r < nq && !any; ++r)
          for (int j = 0; j < niv[r] && !any; ++j) {
            const Interval& in = iv[static_cast<size_t>(r * max_iv + j)];
            any = in.lo < c0 + nk && in.hi > c0;
          }
        if (!any) continue;
        for (int64_t c = 0; c < nk; ++c) {
          const KeyRow kr = key_row(p, b, kh, c0 + c, cached, page0);
          for (int64_t x = 0; x < p.d; ++x)
            kt[static_cast<size_t>(x * kBk + c)] = load_f(kr.k, p.dtype, kr.k_off + x);
          for (int64_t y = 0; y < p.dv; ++y)
            vt[static_cast<size_t>(c * p.dv + y)] = load_f(kr.v, p.dtype, kr.v_off + y);
        }
        for (int64_t r = 0; r < nq; ++r) {
          float* srow = &s[static_cast<size_t>(r * kBk)];
          std::fill(srow, srow + kBk, 0.0f);
          const float* qrow = &qt[static_cast<size_t>(r * p.d)];
          for (int64_t x = 0; x < p.d; ++x) {
            const float qx = qrow[x];
            const float* krow = &kt[static_cast<size_t>(x * kBk)];
            for (int64_t c = 0; c < kBk; ++c) srow[c] += qx * krow[c];
          }
          // P = M ⊙ SiLU(alpha (S + rab)); masked entries are exactly 0.
          const int64_t i = i0 + r;
          for (int64_t c = 0; c < nk; ++c) {
            const int64_t col = c0 + c;
            bool keep = false;
            for (int j = 0; j < niv[r]; ++j) {
              const Interval& in = iv[static_cast<size_t>(r * max_iv + j)];
              keep = keep || (in.lo <= col && col < in.hi);
            }
            if (keep && p.mask) {
              const int64_t hm = p.mask_s[1] == 0 ? 0 : hq;
              const int64_t mo =
                  b * p.mask_s[0] + hm * p.mask_s[1] + i * p.mask_s[2] + col * p.mask_s[3];
              keep = p.mask_dtype == DType::boolean ? static_cast<const uint8_t*>(p.mask)[mo] != 0
                                                    : load_f(p.mask, p.mask_dtype, mo) != 0.0f;
            }
            float val = 0.0f;
            if (keep) {
              float sc = srow[c];
              if (p.rab) {
                const int64_t hr = p.rab_heads == 1 ? 0 : hq;
                sc += load_f(p.rab, p.dtype,
                             b * p.rab_s[0] + hr * p.rab_s[1] + i * p.rab_s[2] + col * p.rab_s[3]);
              }
              sc *= alpha;
              val = sc / (1.0f + std::exp(-sc));
              if (!std::isfinite(val)) val = sc > 0 ? sc : 0.0f;  // exp overflow: SiLU -> 0
            }
            srow[c] = val;
          }
          float* arow = &acc[static_cast<size_t>(r * p.dv)];
          for (int64_t c = 0; c < nk; ++c) {
            const float pc = srow[c];
            if (pc == 0.0f) continue;
            const float* vrow = &vt[static_cast<size_t>(c * p.dv)];
            for (int64_t y = 0; y < p.dv; ++y) arow[y] += pc * vrow[y];
          }
        }
      }
      for (int64_t r = 0; r < nq; ++r) {
        const int64_t i = i0 + r;
        const float scale = p.attn_scale ? p.attn_scale[p.q_token(b, i) * p.attn_scale_stride]
                                         : static_cast<float>(p.silu_scale);
        const int64_t off = p.o_batch * b + (q_row0 + r) * p.o_row + hq * p.o_head;
        for (int64_t y = 0; y < p.dv; ++y)
          store_f(p.out, p.dtype, off + y, acc[static_cast<size_t>(r * p.dv + y)] * scale);
      }
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
