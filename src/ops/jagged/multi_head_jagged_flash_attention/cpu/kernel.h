// jagged/multi_head_jagged_flash_attention/cpu/kernel.h: the optimized CPU path, built twice:
// cpu_generic (multi_head_jagged_flash_attention_cpu.cpp, the baseline ISA) and cpu_avx2
// (multi_head_jagged_flash_attention_cpu_avx2.cpp: AVX2 + FMA + F16C, where the fp32 exp is
// core::exp_poly_f32, which the key loops vectorise, instead of a libm call per score). Work
// items are (h, b, block of kRows rows); each converts chunks of kChunk keys (or queries) to the
// accumulation type once (also transposed, so that a row's kChunk scores are independent sums the
// compiler vectorises) and runs an online softmax over them. fp32 accumulation for
// fp32/fp16/bf16, fp64 for fp64. Fixed order everywhere: results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/exp_poly.h"
#include "core/parallel.h"
#include "ops/jagged/multi_head_jagged_flash_attention/impls.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {
namespace {
constexpr int64_t kRows = 16;   // rows (queries or keys) per work item
constexpr int64_t kChunk = 64;  // keys (or queries) converted at once

// exp in the accumulation type: for fp32 in the AVX2 build core::exp_poly_f32 (core/exp_poly.h,
// about 1 ulp; -inf gives 0, NaN NaN, as std::exp; the arguments here are at most about 0: a score
// minus its row's running max or lse), else std::exp. exp_poly_f32 clamps above 88.37 instead of
// overflowing: past ln(FLT_MAX) the select gives +inf as std::exp does (a score minus a saved lse
// it does not belong to, or a +inf score, would otherwise come out as a finite ~2e38).
template <class Acc>
inline Acc exp_acc(Acc x) {
#if defined(__AVX2__) && defined(__FMA__)
  if constexpr (std::is_same_v<Acc, float>) {
    const float e = core::exp_poly_f32(x);
    return x > 88.7228394f ? std::numeric_limits<float>::infinity() : e;
  }
#endif
  return std::exp(x);
}

template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
AccOf<T> load(T x) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return x;
  else
    return to_float(x);
}
template <class T>
T store(AccOf<T> x) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return x;
  else
    return from_float<T>(x);
}

template <class Acc>
Acc dot(const Acc* a, const Acc* b, int64_t D) {
  Acc s = 0;
  for (int64_t d = 0; d < D; ++d) s += a[d] * b[d];
  return s;
}

// t[d * kChunk + j] = rows[j * D + d] for j < cnt: a chunk laid out for scores().
template <class Acc>
void transpose(const Acc* rows, int64_t cnt, int64_t D, Acc* t) {
  for (int64_t j = 0; j < cnt; ++j)
    for (int64_t d = 0; d < D; ++d) t[d * kChunk + j] = rows[j * D + d];
}

// s[j] = x · row j of a transposed chunk, j < cnt: the inner loop runs over j (independent sums,
// vectorised), each sum in order of d.
template <class Acc>
void scores(const Acc* x, const Acc* t, int64_t D, int64_t cnt, Acc* s) {
  for (int64_t j = 0; j < cnt; ++j) s[j] = 0;
  for (int64_t d = 0; d < D; ++d) {
    const Acc xd = x[d];
    const Acc* td = t + d * kChunk;
    for (int64_t j = 0; j < cnt; ++j) s[j] += xd * td[j];
  }
}

struct Item {
  int64_t h, o, n, first;  // head, sequence start, valid rows, first row of the block
};

// The sequences' clamped ranges and the work items over valid rows, plus per-(h, b) items that
// zero the truncated rows.
struct Plan {
  std::vector<Item> items;
  std::vector<int64_t> cost;  // cost[i] = Σ of rows x (keys + 1) over items before i
  std::vector<Item> tails;    // first = n_b, n = L_b: rows [n_b, L_b) get zeros
};

Plan plan(const Params& p) {
  Plan pl;
  for (int64_t b = 0; b < p.B; ++b) {
    auto off = [&](int64_t i) {
      const int64_t k = i * p.offsets_stride;
      return p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                             : static_cast<const int32_t*>(p.seq_offsets)[k];
    };
    const int64_t o = std::clamp<int64_t>(off(b), 0, p.total_L);
    const int64_t e = std::clamp<int64_t>(off(b + 1), o, p.total_L);
    const int64_t n = std::min(e - o, p.max_L);
    for (int64_t h = 0; h < p.H; ++h) {
      for (int64_t f = 0; f < n; f += kRows) pl.items.push_back({h, o, n, f});
      if (e - o > n) pl.tails.push_back({h, o, e - o, n});
    }
  }
  // Sized once and swapped in (assign and move-assign have out-of-line copies that the AVX2 object
  // would share with baseline ones: scripts/check_isa_objects.sh).
  std::vector<int64_t>(pl.items.size() + 1).swap(pl.cost);
  for (size_t i = 0; i < pl.items.size(); ++i) {
    const Item& it = pl.items[i];
    pl.cost[i + 1] = pl.cost[i] + std::min(kRows, it.n - it.first) * (it.n + 1);
  }
  return pl;
}

// Rows [first, first + cnt) of head h of a [H, total_L, D] operand into dst (cnt x D).
template <class T>
void gather(const HeadRows& t, int64_t h, int64_t row0, int64_t cnt, int64_t D, AccOf<T>* dst) {
  for (int64_t i = 0; i < cnt; ++i) {
    const T* src = static_cast<const T*>(t.data) + h * t.hs + (row0 + i) * t.rs;
    for (int64_t d = 0; d < D; ++d) dst[i * D + d] = load(src[d]);
  }
}

// fn(i0, i1) over contiguous item ranges of about equal cost (one range per thread), so skewed
// lengths balance; each item's result does not depend on the split.
template <class F>
void for_items(const Plan& pl, int threads, F&& fn) {
  const int64_t n = static_cast<int64_t>(pl.items.size());
  const int parts = core::max_threads(threads, n);
  const int64_t total = pl.cost.back();
  auto start = [&](int64_t part) {  // first item whose cost prefix reaches part's share
    const int64_t target = total / parts * part + total % parts * part / parts;
    return static_cast<int64_t>(std::lower_bound(pl.cost.begin(), pl.cost.end() - 1, target) -
                                pl.cost.begin());
  };
  core::parallel_for(parts, 1, parts, [&](int64_t p0, int64_t p1) {
    for (int64_t part = p0; part < p1; ++part) {
      const int64_t i0 = part == 0 ? 0 : start(part), i1 = part + 1 == parts ? n : start(part + 1);
      if (i0 < i1) fn(i0, i1);
    }
  });
}

template <class T>
void zero_tails(const Params& p, const Plan& pl, int threads, std::initializer_list<void*> outs,
                bool lse) {
  const int64_t D = p.D;
  core::parallel_for(static_cast<int64_t>(pl.tails.size()), 1, threads,
                     [&](int64_t i0, int64_t i1) {
                       for (int64_t i = i0; i < i1; ++i) {
                         const Item& it = pl.tails[i];
                         for (void* o : outs) {
                           T* base = static_cast<T*>(o) + (it.h * p.total_L + it.o + it.first) * D;
                           std::fill(base, base + (it.n - it.first) * D, store<T>(0));
                         }
                         if (lse)
                           std::fill(p.lse + it.h * p.total_L + it.o + it.first,
                                     p.lse + it.h * p.total_L + it.o + it.n,
                                     -std::numeric_limits<float>::infinity());
                       }
                     });
}

template <class T>
void forward(const Params& p, int threads) {
  using Acc = AccOf<T>;
  const int64_t D = p.D;
  const Plan pl = plan(p);
  zero_tails<T>(p, pl, threads, {p.out}, p.lse != nullptr);
  const Acc inv_maxl = Acc(1) / static_cast<Acc>(p.max_L);
  for_items(pl, threads, [&](int64_t i0, int64_t i1) {
    std::vector<Acc> q(kRows * D), k(kChunk * D), kt(kChunk * D), v(kChunk * D);
    std::vector<Acc> acc(kRows * D);
    std::vector<Acc> mx(kRows), sum(kRows), s(kChunk);
    for (int64_t i = i0; i < i1; ++i) {
      const Item& it = pl.items[i];
      const int64_t rows = std::min(kRows, it.n - it.first);
      gather<T>(p.q, it.h, it.o + it.first, rows, D, q.data());
      std::fill(acc.begin(), acc.end(), Acc(0));
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<Acc>::infinity());
      std::fill(sum.begin(), sum.end(), Acc(0));
      for (int64_t c = 0; c < it.n; c += kChunk) {
        const int64_t keys = std::min(kChunk, it.n - c);
        gather<T>(p.k, it.h, it.o + c, keys, D, k.data());
        transpose(k.data(), keys, D, kt.data());
        gather<T>(p.v, it.h, it.o + c, keys, D, v.data());
        for (int64_t r = 0; r < rows; ++r) {
          scores(q.data() + r * D, kt.data(), D, keys, s.data());
          Acc cmax = mx[r];
          for (int64_t j = 0; j < keys; ++j) cmax = std::max(cmax, s[j]);
          const Acc scale = exp_acc(mx[r] - cmax);  // exp(-inf) = 0 on the first chunk
          Acc* a = acc.data() + r * D;
          for (int64_t d = 0; d < D; ++d) a[d] *= scale;
          // The exponentials first (a loop the AVX2 build vectorises), then their sum in order
          // of j, then the weighted rows of v.
          for (int64_t j = 0; j < keys; ++j) s[j] = exp_acc(s[j] - cmax);
          Acc add = 0;
          for (int64_t j = 0; j < keys; ++j) add += s[j];
          for (int64_t j = 0; j < keys; ++j) {
            const Acc e = s[j];
            const Acc* vr = v.data() + j * D;
            for (int64_t d = 0; d < D; ++d) a[d] += e * vr[d];
          }
          sum[r] = sum[r] * scale + add;
          mx[r] = cmax;
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t row = it.o + it.first + r;
        T* o = static_cast<T*>(p.out) + (it.h * p.total_L + row) * D;
        const Acc f = inv_maxl / sum[r];
        for (int64_t d = 0; d < D; ++d) o[d] = store<T>(acc[r * D + d] * f);
        if (p.lse) p.lse[it.h * p.total_L + row] = static_cast<float>(mx[r] + std::log(sum[r]));
      }
    }
  });
}

// The row's softmax statistic: the given fp32 lse, or for fp64 the exact one where it and the
// given one are finite (an fp32 lse would put a relative error of |lse|·2^-24 into every fp64 p;
// a non-finite one, given or from a non-finite score, is taken as given, as the reference does).
template <class Acc>
Acc row_lse(const Params& p, const Acc* lse_exact, int64_t h, int64_t row) {
  const Acc given = static_cast<Acc>(p.lse_in[h * p.lse_hs + row]);
  if (!lse_exact) return given;
  const Acc exact = lse_exact[h * p.total_L + row];
  return std::isfinite(exact) && std::isfinite(given) ? exact : given;
}

// fp64 only: lse of every valid row recomputed in fp64 (rows m >= n_b are never read).
template <class T>
std::vector<AccOf<T>> exact_lse(const Params& p, const Plan& pl, int threads) {
  using Acc = AccOf<T>;
  const int64_t D = p.D;
  std::vector<Acc> out(static_cast<size_t>(p.H * p.total_L));
  for_items(pl, threads, [&](int64_t i0, int64_t i1) {
    std::vector<Acc> q(kRows * D), k(kChunk * D), kt(kChunk * D), s(kChunk);
    for (int64_t i = i0; i < i1; ++i) {
      const Item& it = pl.items[i];
      const int64_t rows = std::min(kRows, it.n - it.first), row0 = it.o + it.first;
      gather<T>(p.q, it.h, row0, rows, D, q.data());
      Acc mx[kRows], sum[kRows];
      for (int64_t r = 0; r < rows; ++r) mx[r] = -std::numeric_limits<Acc>::infinity(), sum[r] = 0;
      for (int64_t c = 0; c < it.n; c += kChunk) {
        const int64_t keys = std::min(kChunk, it.n - c);
        gather<T>(p.k, it.h, it.o + c, keys, D, k.data());
        transpose(k.data(), keys, D, kt.data());
        for (int64_t r = 0; r < rows; ++r) {
          scores(q.data() + r * D, kt.data(), D, keys, s.data());
          Acc cmax = mx[r];
          for (int64_t j = 0; j < keys; ++j) cmax = std::max(cmax, s[j]);
          Acc add = 0;
          for (int64_t j = 0; j < keys; ++j) add += exp_acc(s[j] - cmax);
          sum[r] = sum[r] * exp_acc(mx[r] - cmax) + add;
          mx[r] = cmax;
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        out[it.h * p.total_L + row0 + r] = mx[r] + std::log(sum[r]);
    }
  });
  return out;
}

// dq for blocks of query rows: dq(m) = Σ_n p (dp - max_L Δ(m)) k(n).
template <class T>
void backward_dq(const Params& p, const Plan& pl, const AccOf<T>* lse_exact, int threads) {
  using Acc = AccOf<T>;
  const int64_t D = p.D;
  const Acc maxl = static_cast<Acc>(p.max_L), inv_maxl = Acc(1) / maxl;
  for_items(pl, threads, [&](int64_t i0, int64_t i1) {
    std::vector<Acc> q(kRows * D), g(kRows * D), o(kRows * D), k(kChunk * D), v(kChunk * D);
    std::vector<Acc> kt(kChunk * D), vt(kChunk * D), sc(kChunk), dp(kChunk);
    std::vector<Acc> acc(kRows * D), delta(kRows), lse(kRows);
    for (int64_t i = i0; i < i1; ++i) {
      const Item& it = pl.items[i];
      const int64_t rows = std::min(kRows, it.n - it.first), row0 = it.o + it.first;
      gather<T>(p.q, it.h, row0, rows, D, q.data());
      gather<T>(p.grad, it.h, row0, rows, D, g.data());
      gather<T>(p.o, it.h, row0, rows, D, o.data());
      for (int64_t r = 0; r < rows; ++r) {
        delta[r] = maxl * dot(o.data() + r * D, g.data() + r * D, D);
        lse[r] = row_lse(p, lse_exact, it.h, row0 + r);
      }
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t c = 0; c < it.n; c += kChunk) {
        const int64_t keys = std::min(kChunk, it.n - c);
        gather<T>(p.k, it.h, it.o + c, keys, D, k.data());
        gather<T>(p.v, it.h, it.o + c, keys, D, v.data());
        transpose(k.data(), keys, D, kt.data());
        transpose(v.data(), keys, D, vt.data());
        for (int64_t r = 0; r < rows; ++r) {
          scores(q.data() + r * D, kt.data(), D, keys, sc.data());
          scores(g.data() + r * D, vt.data(), D, keys, dp.data());
          Acc* a = acc.data() + r * D;
          for (int64_t j = 0; j < keys; ++j) {  // ds_j, in sc (vectorised in the AVX2 build)
            const Acc pj = exp_acc(sc[j] - lse[r]) * inv_maxl;
            sc[j] = pj * (dp[j] - delta[r]);
          }
          for (int64_t j = 0; j < keys; ++j) {
            const Acc ds = sc[j];
            const Acc* kr = k.data() + j * D;
            for (int64_t d = 0; d < D; ++d) a[d] += ds * kr[d];
          }
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        T* dst = static_cast<T*>(p.dq) + (it.h * p.total_L + row0 + r) * D;
        for (int64_t d = 0; d < D; ++d) dst[d] = store<T>(acc[r * D + d]);
      }
    }
  });
}

// dk, dv for blocks of key rows: dv(n) = Σ_m p g(m), dk(n) = Σ_m ds q(m).
template <class T>
void backward_dkdv(const Params& p, const Plan& pl, const AccOf<T>* lse_exact, int threads) {
  using Acc = AccOf<T>;
  const int64_t D = p.D;
  const Acc maxl = static_cast<Acc>(p.max_L), inv_maxl = Acc(1) / maxl;
  for_items(pl, threads, [&](int64_t i0, int64_t i1) {
    std::vector<Acc> k(kRows * D), v(kRows * D), q(kChunk * D), g(kChunk * D), o(kChunk * D);
    std::vector<Acc> qt(kChunk * D), gt(kChunk * D), sc(kChunk), dp(kChunk);
    std::vector<Acc> ak(kRows * D), av(kRows * D), delta(kChunk), lse(kChunk);
    for (int64_t i = i0; i < i1; ++i) {
      const Item& it = pl.items[i];
      const int64_t rows = std::min(kRows, it.n - it.first), row0 = it.o + it.first;
      gather<T>(p.k, it.h, row0, rows, D, k.data());
      gather<T>(p.v, it.h, row0, rows, D, v.data());
      std::fill(ak.begin(), ak.end(), Acc(0));
      std::fill(av.begin(), av.end(), Acc(0));
      for (int64_t c = 0; c < it.n; c += kChunk) {
        const int64_t qs = std::min(kChunk, it.n - c);
        gather<T>(p.q, it.h, it.o + c, qs, D, q.data());
        gather<T>(p.grad, it.h, it.o + c, qs, D, g.data());
        gather<T>(p.o, it.h, it.o + c, qs, D, o.data());
        for (int64_t m = 0; m < qs; ++m) {
          delta[m] = maxl * dot(o.data() + m * D, g.data() + m * D, D);
          lse[m] = row_lse(p, lse_exact, it.h, it.o + c + m);
        }
        transpose(q.data(), qs, D, qt.data());
        transpose(g.data(), qs, D, gt.data());
        for (int64_t r = 0; r < rows; ++r) {
          scores(k.data() + r * D, qt.data(), D, qs, sc.data());
          scores(v.data() + r * D, gt.data(), D, qs, dp.data());
          Acc *dk = ak.data() + r * D, *dv = av.data() + r * D;
          for (int64_t m = 0; m < qs; ++m) {  // p_m in sc, ds_m in dp (vectorised in AVX2)
            const Acc pm = exp_acc(sc[m] - lse[m]) * inv_maxl;
            dp[m] = pm * (dp[m] - delta[m]);
            sc[m] = pm;
          }
          for (int64_t m = 0; m < qs; ++m) {
            const Acc pm = sc[m], ds = dp[m];
            const Acc *qm = q.data() + m * D, *gm = g.data() + m * D;
            for (int64_t d = 0; d < D; ++d) {
              dk[d] += ds * qm[d];
              dv[d] += pm * gm[d];
            }
          }
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t at = (it.h * p.total_L + row0 + r) * D;
        T* dk = static_cast<T*>(p.dk) + at;
        T* dv = static_cast<T*>(p.dv) + at;
        for (int64_t d = 0; d < D; ++d) {
          dk[d] = store<T>(ak[r * D + d]);
          dv[d] = store<T>(av[r * D + d]);
        }
      }
    }
  });
}

template <class T>
void backward(const Params& p, int threads) {
  const Plan pl = plan(p);
  zero_tails<T>(p, pl, threads, {p.dq, p.dk, p.dv}, false);
  const std::vector<AccOf<T>> exact =
      std::is_same_v<T, double> ? exact_lse<T>(p, pl, threads) : std::vector<AccOf<T>>();
  const AccOf<T>* lse_exact = exact.empty() ? nullptr : exact.data();
  backward_dq<T>(p, pl, lse_exact, threads);
  backward_dkdv<T>(p, pl, lse_exact, threads);
}
// The CPU path (cpu/multi_head_jagged_flash_attention_cpu*.cpp call it).
Status run(const Params& p, const Context& ctx) {
  const bool ok = visit_floating(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (p.backward)
      backward<T>(p, ctx.num_threads);
    else
      forward<T>(p, ctx.num_threads);
  });
  if (!ok)
    return Status(StatusCode::internal,
                  "multi_head_jagged_flash_attention: the CPU path reached with a bad dtype");
  return Status::Ok();
}
}  // namespace

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
