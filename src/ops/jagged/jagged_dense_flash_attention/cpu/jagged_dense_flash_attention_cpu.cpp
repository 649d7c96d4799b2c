// jagged/jagged_dense_flash_attention/cpu/jagged_dense_flash_attention_cpu.cpp: cpu_generic.
// Arithmetic in fp32 for fp32/fp16/bf16, fp64 for fp64; every output element is written by one
// work item in a fixed order (bit-identical across runs and thread counts).
//   forward:  items (b, block of kCols target columns); k's block is transposed once into a
//             [kCols, D] buffer, then one pass over l < n_b with an online softmax per column
//             (running max over valid rows only; rescaled only when the max grows).
//   backward: pass A, items (b, block of kRows rows): s, p = exp(s - lse), dp = g . v,
//             ds = p (dp - delta) per (l, t); writes dbias rows l < n_b, dq and dv rows (rows
//             n_b <= l < L_b as 0). Pass B, items (b, column block): recomputes ds and sums
//             dk[b, :, t] = sum_l q(b,l) ds[l,t] in l order; writes dbias rows n_b <= l < S as 0.
// Offsets are clamped into [0, total_L].
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/jagged/common/cpu_io.h"
#include "ops/jagged/jagged_dense_flash_attention/impls.h"

namespace recops::ops::jagged_dense_flash_attention_ns {
namespace {
constexpr int64_t kCols = 16;  // target columns of one forward / dk item
constexpr int64_t kRows = 32;  // rows of one dq/dv item

using jagged_cpu::load;
using jagged_cpu::store;

int64_t offset_at(const Params& p, int64_t i) {
  const int64_t k = i * p.offsets_stride;
  const int64_t v = p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                                    : static_cast<const int32_t*>(p.seq_offsets)[k];
  return std::clamp<int64_t>(v, 0, p.total_L);
}

struct Seq {
  int64_t start, rows, n;  // rows: L_b (clamped), n = min(L_b, max_L)
};
std::vector<Seq> sequences(const Params& p) {
  std::vector<Seq> s(static_cast<size_t>(p.B));
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t a = offset_at(p, b), e = std::max(a, offset_at(p, b + 1));
    s[b] = {a, e - a, std::min(e - a, p.max_L)};
  }
  return s;
}

template <class Acc, class T>
void load_row(const T* src, int64_t D, Acc* dst) {
  for (int64_t d = 0; d < D; ++d) dst[d] = load<Acc>(src[d]);
}
// Eight independent partial sums (the compiler keeps them in one vector register), added in a
// fixed order: a serial sum would wait on every add's latency.
template <class Acc>
Acc dot(const Acc* a, const Acc* b, int64_t D) {
  constexpr int kW = 8;
  Acc s[kW] = {};
  int64_t d = 0;
  for (; d + kW <= D; d += kW)
    for (int i = 0; i < kW; ++i) s[i] += a[d + i] * b[d + i];
  Acc r = 0;
  for (; d < D; ++d) r += a[d] * b[d];
  for (int i = 0; i < kW; ++i) r += s[i];
  return r;
}
// kt[j, :] = k[b, :, t0 + j] for j < w (Acc).
template <class Acc, class T>
void load_k_cols(const Params& p, int64_t b, int64_t t0, int64_t w, Acc* kt) {
  const T* k = static_cast<const T*>(p.k) + b * p.k_sb;
  for (int64_t j = 0; j < w; ++j)
    for (int64_t d = 0; d < p.D; ++d)
      kt[j * p.D + d] = load<Acc>(k[d * p.k_sd + (t0 + j) * p.k_st]);
}
template <class Acc, class T>
Acc bias_at(const Params& p, int64_t b, int64_t l, int64_t t) {
  return load<Acc>(static_cast<const T*>(p.bias)[b * p.bias_sb + l * p.bias_sl + t * p.bias_st]);
}

template <class T, class Acc>
void forward_item(const Params& p, int64_t b, const Seq& s, int64_t t0, int64_t w) {
  const int64_t D = p.D;
  const Acc inf = std::numeric_limits<Acc>::infinity();
  std::vector<Acc> kt(static_cast<size_t>(w * D)), acc(static_cast<size_t>(w * D), Acc(0));
  std::vector<Acc> row(static_cast<size_t>(2 * D));
  Acc* qr = row.data();
  Acc* vr = row.data() + D;
  Acc m[kCols], sum[kCols];
  for (int64_t j = 0; j < w; ++j) m[j] = -inf, sum[j] = 0;
  load_k_cols<Acc, T>(p, b, t0, w, kt.data());
  const T* q = static_cast<const T*>(p.q);
  const T* v = static_cast<const T*>(p.v);
  for (int64_t l = 0; l < s.n; ++l) {
    load_row(q + (s.start + l) * p.q_row, D, qr);
    load_row(v + (s.start + l) * p.v_row, D, vr);
    for (int64_t j = 0; j < w; ++j) {
      const Acc x = dot(qr, kt.data() + j * D, D) + bias_at<Acc, T>(p, b, l, t0 + j);
      if (x == -inf) continue;  // exp(-inf) = 0: nothing to add
      Acc* a = acc.data() + j * D;
      if (x > m[j]) {  // the max grows: rescale what was summed (nothing when m was -inf)
        const Acc c = m[j] == -inf ? Acc(0) : std::exp(m[j] - x);
        sum[j] *= c;
        for (int64_t d = 0; d < D; ++d) a[d] *= c;
        m[j] = x;
      }
      const Acc e = std::exp(x - m[j]);  // NaN for a NaN score: the column becomes NaN
      sum[j] += e;
      for (int64_t d = 0; d < D; ++d) a[d] += e * vr[d];
    }
  }
  T* out = static_cast<T*>(p.out);
  float* lse = static_cast<float*>(p.lse);
  for (int64_t j = 0; j < w; ++j) {
    const int64_t t = t0 + j;
    // No row, or every score -inf. A NaN score leaves m as it was but makes sum NaN (exp(NaN)), so
    // a column whose scores are NaN and -inf only is NaN (lse and out), as the reference's.
    const bool none = m[j] == -inf && sum[j] == Acc(0);
    if (lse)
      lse[b * p.T + t] = none ? -std::numeric_limits<float>::infinity()
                              : static_cast<float>(m[j] + std::log(sum[j]));
    const Acc r = none ? Acc(0) : Acc(1) / sum[j];
    T* o = out + (b * p.T + t) * D;
    for (int64_t d = 0; d < D; ++d) o[d] = store<T>(acc[j * D + d] * r);
  }
}

// What every backward item of sequence b needs: g [T, D] and delta [T] (Acc) and lse [T].
template <class T, class Acc>
struct BwdSeq {
  std::vector<Acc> g, delta, lse;
  BwdSeq(const Params& p, int64_t b) : g(p.T * p.D), delta(p.T), lse(p.T) {
    const T* gr = static_cast<const T*>(p.grad);
    const T* o = static_cast<const T*>(p.out);
    const float* ls = static_cast<const float*>(p.lse);
    for (int64_t t = 0; t < p.T; ++t) {
      Acc* gt = g.data() + t * p.D;
      load_row(gr + b * p.grad_sb + t * p.grad_st, p.D, gt);
      Acc dl = 0;
      for (int64_t d = 0; d < p.D; ++d) dl += load<Acc>(o[b * p.out_sb + t * p.out_st + d]) * gt[d];
      delta[t] = dl;
      lse[t] = static_cast<Acc>(ls[b * p.lse_sb + t * p.lse_st]);
    }
  }
  // p and ds of row (qr, vr) at column t whose score is x.
  void p_ds(Acc x, int64_t t, const Acc* vr, int64_t D, Acc* pr, Acc* ds) const {
    const Acc L = lse[t];
    *pr = L == -std::numeric_limits<Acc>::infinity() ? Acc(0) : std::exp(x - L);
    *ds = *pr * (dot(g.data() + t * D, vr, D) - delta[t]);
  }
};

template <class T, class Acc>
void bwd_rows_item(const Params& p, int64_t b, const Seq& s, int64_t l0, int64_t l1) {
  const int64_t D = p.D, T_ = p.T;
  if (l0 >= s.n) {  // truncated rows only: zeros, without the per-sequence setup
    const int64_t n = (l1 - l0) * D;
    std::fill_n(static_cast<T*>(p.dq) + (s.start + l0) * D, n, store<T>(Acc(0)));
    std::fill_n(static_cast<T*>(p.dv) + (s.start + l0) * D, n, store<T>(Acc(0)));
    return;
  }
  const BwdSeq<T, Acc> bs(p, b);
  std::vector<Acc> kt(static_cast<size_t>(T_ * D)), buf(static_cast<size_t>(4 * D));
  load_k_cols<Acc, T>(p, b, 0, T_, kt.data());
  Acc *qr = buf.data(), *vr = qr + D, *gq = vr + D, *gv = gq + D;
  const T* q = static_cast<const T*>(p.q);
  const T* v = static_cast<const T*>(p.v);
  T* dq = static_cast<T*>(p.dq);
  T* dv = static_cast<T*>(p.dv);
  T* dbias = static_cast<T*>(p.dbias);
  for (int64_t l = l0; l < l1; ++l) {
    std::fill(gq, gq + 2 * D, Acc(0));
    if (l < s.n) {
      load_row(q + (s.start + l) * p.q_row, D, qr);
      load_row(v + (s.start + l) * p.v_row, D, vr);
      for (int64_t t = 0; t < T_; ++t) {
        const Acc* kc = kt.data() + t * D;
        const Acc* gt = bs.g.data() + t * D;
        Acc pr, ds;
        bs.p_ds(dot(qr, kc, D) + bias_at<Acc, T>(p, b, l, t), t, vr, D, &pr, &ds);
        dbias[(b * p.S + l) * T_ + t] = store<T>(ds);
        for (int64_t d = 0; d < D; ++d) gq[d] += ds * kc[d];
        for (int64_t d = 0; d < D; ++d) gv[d] += pr * gt[d];
      }
    }
    for (int64_t d = 0; d < D; ++d) {
      dq[(s.start + l) * D + d] = store<T>(gq[d]);
      dv[(s.start + l) * D + d] = store<T>(gv[d]);
    }
  }
}

template <class T, class Acc>
void bwd_cols_item(const Params& p, int64_t b, const Seq& s, int64_t t0, int64_t w) {
  const int64_t D = p.D;
  const BwdSeq<T, Acc> bs(p, b);
  std::vector<Acc> kt(static_cast<size_t>(w * D)), acc(static_cast<size_t>(w * D), Acc(0));
  std::vector<Acc> row(static_cast<size_t>(2 * D));
  Acc *qr = row.data(), *vr = qr + D;
  load_k_cols<Acc, T>(p, b, t0, w, kt.data());
  const T* q = static_cast<const T*>(p.q);
  const T* v = static_cast<const T*>(p.v);
  for (int64_t l = 0; l < s.n; ++l) {
    load_row(q + (s.start + l) * p.q_row, D, qr);
    load_row(v + (s.start + l) * p.v_row, D, vr);
    for (int64_t j = 0; j < w; ++j) {
      Acc pr, ds;
      bs.p_ds(dot(qr, kt.data() + j * D, D) + bias_at<Acc, T>(p, b, l, t0 + j), t0 + j, vr, D, &pr,
              &ds);
      Acc* a = acc.data() + j * D;
      for (int64_t d = 0; d < D; ++d) a[d] += ds * qr[d];
    }
  }
  T* dk = static_cast<T*>(p.dk);
  for (int64_t d = 0; d < D; ++d)
    for (int64_t j = 0; j < w; ++j) dk[(b * D + d) * p.T + t0 + j] = store<T>(acc[j * D + d]);
  T* dbias = static_cast<T*>(p.dbias);
  for (int64_t l = s.n; l < p.S; ++l)
    for (int64_t j = 0; j < w; ++j) dbias[(b * p.S + l) * p.T + t0 + j] = store<T>(Acc(0));
}

struct Item {
  int64_t b, lo, hi;  // [lo, hi): target columns, or rows for pass A
  int64_t cost;       // (valid rows + 1) x columns: the dot products it computes, at least 1
};
std::vector<Item> blocks(const std::vector<Seq>& seqs, bool rows, int64_t T, int64_t step) {
  std::vector<Item> items;
  for (int64_t b = 0; b < static_cast<int64_t>(seqs.size()); ++b) {
    const int64_t n = rows ? seqs[b].rows : T;
    for (int64_t i = 0; i < n; i += step) {
      const int64_t hi = std::min(n, i + step);
      const int64_t cost = rows ? (std::max<int64_t>(0, std::min(hi, seqs[b].n) - i) + 1) * T
                                : (seqs[b].n + 1) * (hi - i);
      items.push_back({b, i, hi, std::max<int64_t>(1, cost)});
    }
  }
  return items;
}

// Runs fn on every item; threads take contiguous item ranges of about equal cost (found by binary
// search over the cost prefix), so skewed lengths balance. Outputs do not depend on the split.
template <class F>
void each(const std::vector<Item>& items, int threads, F&& fn) {
  const int64_t n = static_cast<int64_t>(items.size());
  std::vector<int64_t> pre(static_cast<size_t>(n + 1), 0);
  for (int64_t i = 0; i < n; ++i) pre[i + 1] = pre[i] + items[i].cost;
  const int64_t parts = core::max_threads(threads, n);
  core::parallel_for(parts, 1, threads, [&](int64_t c0, int64_t c1) {
    auto at = [&](int64_t c) {  // the first item of part c
      const int64_t target = static_cast<int64_t>(static_cast<double>(pre[n]) * c / parts);
      return static_cast<int64_t>(std::lower_bound(pre.begin(), pre.end(), target) - pre.begin());
    };
    const int64_t i0 = c0 == 0 ? 0 : at(c0), i1 = c1 == parts ? n : at(c1);
    for (int64_t i = i0; i < i1; ++i) fn(items[i]);
  });
}

template <class T>
void compute(const Params& p, int threads) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const std::vector<Seq> seqs = sequences(p);
  const std::vector<Item> cols = blocks(seqs, false, p.T, kCols);
  if (!p.backward) {
    each(cols, threads,
         [&](const Item& it) { forward_item<T, Acc>(p, it.b, seqs[it.b], it.lo, it.hi - it.lo); });
    return;
  }
  each(blocks(seqs, true, p.T, kRows), threads,
       [&](const Item& it) { bwd_rows_item<T, Acc>(p, it.b, seqs[it.b], it.lo, it.hi); });
  each(cols, threads,
       [&](const Item& it) { bwd_cols_item<T, Acc>(p, it.b, seqs[it.b], it.lo, it.hi - it.lo); });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) { compute<decltype(t)>(p, ctx.num_threads); }))
    return Status(StatusCode::internal,
                  "jagged_dense_flash_attention: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::jagged_dense_flash_attention_ns
