// hstu_attn/reference.cpp: the golden, written as the spec's formulas (hstu_attention.md §1, §3),
// one score entry at a time. No tiling, no shortcuts: every (sequence, query head, query, key)
// is visited and the mask is evaluated from its definition.
//
// Two modes over the same loops:
// - golden (p.plain = false): inputs upcast exactly, everything in double, outputs rounded once.
// - plain  (p.plain = true): the double standard's same-precision baseline. It rounds what a
//   straightforward framework composition rounds: the score matmul result, score + rab, the
//   alpha scaling, P = SiLU(S) (before P·V), dP and G in the backward, each output; sums
//   accumulate in fp32 as a matmul would.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {
namespace {

using P = HstuAttnParams;

double load(const void* base, DType t, int64_t off) {
  switch (t) {
    case DType::fp32: return static_cast<const float*>(base)[off];
    case DType::fp16: return to_double(static_cast<const Half*>(base)[off]);
    case DType::bf16: return to_double(static_cast<const BFloat16*>(base)[off]);
    case DType::boolean: return static_cast<const uint8_t*>(base)[off] != 0 ? 1.0 : 0.0;
    default: return static_cast<const double*>(base)[off];
  }
}

void store(void* base, DType t, int64_t off, double x) {
  switch (t) {
    case DType::fp32: static_cast<float*>(base)[off] = static_cast<float>(x); break;
    case DType::fp16: static_cast<Half*>(base)[off] = half_from_double(x); break;
    case DType::bf16: static_cast<BFloat16*>(base)[off] = bf16_from_double(x); break;
    default: static_cast<double*>(base)[off] = x; break;
  }
}

// x rounded to the storage dtype (plain mode) or left exact (golden).
double rnd(const P& p, double x) {
  if (!p.plain) return x;
  switch (p.dtype) {
    case DType::fp32: return static_cast<float>(x);
    case DType::fp16: return to_double(half_from_double(x));
    case DType::bf16: return to_double(bf16_from_double(x));
    default: return x;
  }
}

// The accumulator of a dot product: fp32 in plain mode (a matmul's accumulator), else double.
double acc_add(const P& p, double acc, double term) {
  return p.plain ? static_cast<double>(static_cast<float>(acc) + static_cast<float>(term))
                 : acc + term;
}

double sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}

// Spec §3, evaluated in the spec's order, for query i < Lq and key c of sequence b, head hq.
bool valid(const P& p, int64_t b, int64_t hq, int64_t i, int64_t c, int64_t Lq, int64_t Lk) {
  if (c >= Lk) return false;  // rule 1
  if (p.mask) {               // rule 2: custom mask tensor
    const int64_t hm = p.mask_s[1] == 0 ? 0 : hq;
    const int64_t off = b * p.mask_s[0] + hm * p.mask_s[1] + i * p.mask_s[2] + c * p.mask_s[3];
    return load(p.mask, p.mask_dtype, off) != 0;
  }
  if (p.func) {  // rule 2: interval mask, keep c in [0, F0) ∪ [F1, F2) ∪ ...
    const int64_t hf = p.func_s[0] == 0 ? 0 : hq, tok = p.q_token(b, i);
    auto F = [&](int64_t j) {
      return static_cast<int64_t>(p.func[hf * p.func_s[0] + j * p.func_s[1] + tok * p.func_s[2]]);
    };
    if (c < F(0)) return true;
    for (int64_t j = 1; j + 1 < p.nfunc; j += 2)
      if (F(j) <= c && c < F(j + 1)) return true;
    return false;
  }
  const int64_t r = i + (Lk - Lq);  // delta-q: the last query aligns with the last key
  const int64_t C = p.contexts(b), T = p.targets(b), h = Lk - T;
  if (C > 0 && r < C) return c < h;  // rule 3: contexts see contexts + history
  // rule 4, as differences: |c - r| < Lk, so a huge bound cannot overflow
  if (p.window_right >= 0 && c - r > p.window_right) return false;
  if (p.window_left >= 0 && r - c > p.window_left) return false;
  if (T > 0 && r >= h && c >= h) {  // rule 5: target groups
    const int64_t g = (r - h) / p.group_size;
    if (c < h + g * p.group_size) return false;
  }
  return true;
}

// Element offset of key / value element 0 of key position c (cache first, then new tokens), and
// the tensor holding it.
struct KeyRef {
  const void* k;
  int64_t k_off;
  const void* v;
  int64_t v_off;
};
KeyRef key_at(const P& p, int64_t b, int64_t kh, int64_t c, int64_t cached) {
  if (c < cached) {
    const int64_t po = P::load(p.page_offsets, p.page_offsets_int64, p.page_offsets_stride, b);
    const int64_t page =
        P::load(p.page_ids, p.page_ids_int64, p.page_ids_stride, po + c / p.page_size);
    const int64_t base = page * p.kv_s[0] + (c % p.page_size) * p.kv_s[2] + kh * p.kv_s[3];
    return {p.kv_cache, base, p.kv_cache, base + p.kv_s[1]};
  }
  const int64_t t = p.k_start(b) + (c - cached);
  return {p.k, b * p.k_batch + t * p.k_row + kh * p.k_head, p.v,
          b * p.v_batch + t * p.v_row + kh * p.v_head};
}

// The row's normaliser: attn_scale[token] when given, else silu_scale.
double row_scale(const P& p, int64_t b, int64_t i) {
  return p.attn_scale ? p.attn_scale[p.q_token(b, i) * p.attn_scale_stride] : p.silu_scale;
}

// S = alpha * (q·k + rab) for a valid entry, rounded the way the mode says.
double score(const P& p, int64_t b, int64_t hq, int64_t i, int64_t c, int64_t q_off,
             const KeyRef& kr) {
  double dot = 0;
  for (int64_t x = 0; x < p.d; ++x)
    dot = acc_add(p, dot, load(p.q, p.dtype, q_off + x) * load(kr.k, p.dtype, kr.k_off + x));
  double s = rnd(p, dot);
  if (p.rab) {
    const int64_t hr = p.rab_heads == 1 ? 0 : hq;
    s = rnd(p, s + load(p.rab, p.dtype,
                        b * p.rab_s[0] + hr * p.rab_s[1] + i * p.rab_s[2] + c * p.rab_s[3]));
  }
  return rnd(p, p.alpha * s);
}

}  // namespace

// Every (sequence, head) writes its own output rows, so they run in parallel (OpenMP) with the
// same sums in the same order as one thread.
Status hstu_attn_fwd_reference(const HstuAttnParams& p, const Context&) {
  const int64_t group = p.Hq / p.Hk;
  const int nt = core::max_threads(0, p.B * p.Hq);
#pragma omp parallel num_threads(nt)
  {
    std::vector<double> acc(static_cast<size_t>(p.dv));
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (int64_t b = 0; b < p.B; ++b) {
      for (int64_t hq = 0; hq < p.Hq; ++hq) {
        const int64_t Lq = p.len_q(b), Lk = p.len_k(b), cached = p.len_cached(b);
        const int64_t kh = hq / group;
        for (int64_t i = 0; i < Lq; ++i) {
          const int64_t q_off = b * p.q_batch + (p.q_start(b) + i) * p.q_row + hq * p.q_head;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t c = 0; c < Lk; ++c) {
            if (!valid(p, b, hq, i, c, Lq, Lk)) continue;  // masked: contributes exactly 0
            const KeyRef kr = key_at(p, b, kh, c, cached);
            const double s = score(p, b, hq, i, c, q_off, kr);
            const double pv = rnd(p, s * sigmoid(s));
            for (int64_t x = 0; x < p.dv; ++x)
              acc[x] = acc_add(p, acc[x], pv * load(kr.v, p.dtype, kr.v_off + x));
          }
          const double scale = row_scale(p, b, i);
          const int64_t o_off = b * p.o_batch + (p.q_start(b) + i) * p.o_row + hq * p.o_head;
          for (int64_t x = 0; x < p.dv; ++x)
            store(p.out, p.dtype, o_off + x, rnd(p, rnd(p, acc[x]) * scale));
        }
      }
    }
  }
  return Status::Ok();
}

// dV = scale Pᵀ dO, dP = scale dO Vᵀ, G = M ⊙ SiLU'(S) ⊙ dP, dQ = α G K, dK = α Gᵀ Q, dRab = α G.
// Sums run in a fixed order (deterministic); GQA heads and broadcast rab heads sum into one.
Status hstu_attn_bwd_reference(const HstuAttnParams& p, const Context&) {
  const int64_t group = p.Hq / p.Hk;
  // Accumulators indexed by logical position: q tokens (B*Sq dense / total_q jagged) etc.
  const int64_t nq = p.jagged ? p.q_start(p.B) : p.B * p.Sq;
  const int64_t nk = p.jagged ? p.k_start(p.B) : p.B * p.Sk;
  auto tok_k = [&](int64_t b, int64_t c) { return p.jagged ? p.k_start(b) + c : b * p.Sk + c; };
  std::vector<double> dq(static_cast<size_t>(nq * p.Hq * p.d), 0.0);
  std::vector<double> dk(static_cast<size_t>(nk * p.Hk * p.d), 0.0);
  std::vector<double> dvv(static_cast<size_t>(nk * p.Hk * p.dv), 0.0);
  const int64_t Hr = p.rab_heads;
  std::vector<double> drab(p.drab ? static_cast<size_t>(p.B * Hr * p.Sq * p.Sk) : 0, 0.0);
  // Parallel over (sequence, key head): dK/dV of a key head sum over its query heads in order,
  // dQ is per query head, so each accumulator sees the one-thread order. A head-broadcast dRab
  // sums over every head of a sequence: then only sequences run in parallel.
  const bool shared_drab = p.drab != nullptr && Hr == 1;
  const int64_t units = shared_drab ? p.B : p.B * p.Hk;
#pragma omp parallel for schedule(dynamic, 1) num_threads(core::max_threads(0, units))
  for (int64_t u = 0; u < units; ++u) {
    const int64_t b = shared_drab ? u : u / p.Hk;
    const int64_t h_lo = shared_drab ? 0 : (u % p.Hk) * group;
    const int64_t h_hi = shared_drab ? p.Hq : h_lo + group;
    const int64_t Lq = p.len_q(b), Lk = p.len_k(b);
    for (int64_t hq = h_lo; hq < h_hi; ++hq) {
      const int64_t kh = hq / group;
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t q_off = b * p.q_batch + (p.q_start(b) + i) * p.q_row + hq * p.q_head;
        const int64_t do_off = b * p.do_batch + (p.q_start(b) + i) * p.do_row + hq * p.do_head;
        const int64_t qi = p.q_token(b, i);
        const double scale = row_scale(p, b, i);
        for (int64_t c = 0; c < Lk; ++c) {
          if (!valid(p, b, hq, i, c, Lq, Lk)) continue;
          const KeyRef kr = key_at(p, b, kh, c, 0);
          const double s = score(p, b, hq, i, c, q_off, kr);
          const double sg = sigmoid(s);
          const double pv = rnd(p, s * sg);
          double dp = 0;
          for (int64_t x = 0; x < p.dv; ++x)
            dp = acc_add(p, dp,
                         load(p.dout, p.dtype, do_off + x) * load(kr.v, p.dtype, kr.v_off + x));
          dp = rnd(p, rnd(p, dp) * scale);
          const double g = rnd(p, sg * (1.0 + s * (1.0 - sg)) * dp);
          const int64_t kc = tok_k(b, c);
          for (int64_t x = 0; x < p.dv; ++x) {
            double& a = dvv[static_cast<size_t>((kc * p.Hk + kh) * p.dv + x)];
            a = acc_add(p, a, scale * pv * load(p.dout, p.dtype, do_off + x));
          }
          for (int64_t x = 0; x < p.d; ++x) {
            double& aq = dq[static_cast<size_t>((qi * p.Hq + hq) * p.d + x)];
            aq = acc_add(p, aq, p.alpha * g * load(kr.k, p.dtype, kr.k_off + x));
            double& ak = dk[static_cast<size_t>((kc * p.Hk + kh) * p.d + x)];
            ak = acc_add(p, ak, p.alpha * g * load(p.q, p.dtype, q_off + x));
          }
          if (p.drab) {
            double& ar =
                drab[static_cast<size_t>(((b * Hr + (Hr == 1 ? 0 : hq)) * p.Sq + i) * p.Sk + c)];
            ar = acc_add(p, ar, p.alpha * g);
          }
        }
      }
    }
  }
  // Write every element of every gradient (padding and masked positions get 0).
  for (int64_t b = 0; b < p.B; ++b) {
    for (int64_t i = 0; i < p.len_q(b); ++i) {
      const int64_t qi = p.q_token(b, i);
      for (int64_t h = 0; h < p.Hq; ++h)
        for (int64_t x = 0; x < p.d; ++x)
          store(p.dq, p.dtype, b * p.dq_batch + (p.q_start(b) + i) * p.dq_row + h * p.dq_head + x,
                rnd(p, dq[static_cast<size_t>((qi * p.Hq + h) * p.d + x)]));
    }
    for (int64_t c = 0; c < p.len_k_new(b); ++c) {
      const int64_t kc = tok_k(b, c);
      for (int64_t h = 0; h < p.Hk; ++h) {
        for (int64_t x = 0; x < p.d; ++x)
          store(p.dk, p.dtype, b * p.dk_batch + (p.k_start(b) + c) * p.dk_row + h * p.dk_head + x,
                rnd(p, dk[static_cast<size_t>((kc * p.Hk + h) * p.d + x)]));
        for (int64_t x = 0; x < p.dv; ++x)
          store(p.dv_out, p.dtype,
                b * p.dv_batch + (p.k_start(b) + c) * p.dv_row + h * p.dv_head + x,
                rnd(p, dvv[static_cast<size_t>((kc * p.Hk + h) * p.dv + x)]));
      }
    }
  }
  if (p.drab) {
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < Hr; ++h)
        for (int64_t i = 0; i < p.Sq; ++i)
          for (int64_t c = 0; c < p.Sk; ++c)
            store(p.drab, p.dtype,
                  b * p.drab_s[0] + h * p.drab_s[1] + i * p.drab_s[2] + c * p.drab_s[3],
                  rnd(p, drab[static_cast<size_t>(((b * Hr + h) * p.Sq + i) * p.Sk + c)]));
  }
  return Status::Ok();
}

void hstu_attn_mask_reference(const HstuAttnParams& p, int64_t b, int64_t h, uint8_t* out,
                              int64_t rs, int64_t cs) {
  const int64_t Lq = p.len_q(b), Lk = p.len_k(b);
  for (int64_t i = 0; i < p.Sq; ++i)
    for (int64_t c = 0; c < p.Sk; ++c)
      out[i * rs + c * cs] = i < Lq && valid(p, b, h, i, c, Lq, Lk) ? 1 : 0;
}

}  // namespace recops::ops
