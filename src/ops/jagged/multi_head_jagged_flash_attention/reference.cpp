// jagged/multi_head_jagged_flash_attention/reference.cpp: the golden (accuracy.md): jagged_ops.md
// §2.10 in plain fp64 loops, each output rounded once to its dtype. With Params::plain it is the
// double standard's baseline instead: the same loops accumulating in the input precision (fp32;
// fp64 for fp64), p and ds rounded to the input dtype before the products, and the backward's p
// taken from the given fp32 lse (for 16-bit and fp32 inputs), as a framework composition would.
// Includes params.h and core only.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/jagged/multi_head_jagged_flash_attention/impls.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {
namespace {

int64_t offset(const Params& p, int64_t i) {
  const int64_t k = i * p.offsets_stride;
  return p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                         : static_cast<const int32_t*>(p.seq_offsets)[k];
}

template <class T>
double at(const HeadRows& t, int64_t h, int64_t r, int64_t d) {
  return to_double(static_cast<const T*>(t.data)[h * t.hs + r * t.rs + d]);
}

template <class T, class Acc>
struct Golden {
  const Params& p;
  bool plain;
  // In the plain baseline, a product operand rounded to the input dtype.
  Acc rnd(Acc x) const {
    return plain ? static_cast<Acc>(to_double(from_double<T>(static_cast<double>(x)))) : x;
  }
  Acc dot(const HeadRows& a, int64_t ra, const HeadRows& b, int64_t rb, int64_t h) const {
    Acc s = 0;
    for (int64_t d = 0; d < p.D; ++d)
      s += static_cast<Acc>(at<T>(a, h, ra, d)) * static_cast<Acc>(at<T>(b, h, rb, d));
    return s;
  }
  // Row i of the softmax of s over n keys: exp(s - lse) / max_L, lse over the n scores.
  Acc lse_of(const std::vector<Acc>& s) const {
    Acc mx = -std::numeric_limits<Acc>::infinity();
    for (Acc x : s) mx = std::max(mx, x);
    Acc sum = 0;
    for (Acc x : s) sum += std::exp(x - mx);
    return mx + std::log(sum);
  }

  void forward(int64_t h, int64_t o, int64_t len, int64_t n) const {
    T* out = static_cast<T*>(p.out);
    std::vector<Acc> s(static_cast<size_t>(n));
    for (int64_t m = 0; m < len; ++m) {
      T* orow = out + (h * p.total_L + o + m) * p.D;
      float* lse = p.lse ? p.lse + h * p.total_L + o + m : nullptr;
      if (m >= n) {
        for (int64_t d = 0; d < p.D; ++d) orow[d] = from_double<T>(0.0);
        if (lse) *lse = -std::numeric_limits<float>::infinity();
        continue;
      }
      for (int64_t j = 0; j < n; ++j) s[j] = dot(p.q, o + m, p.k, o + j, h);
      const Acc l = lse_of(s);
      for (int64_t j = 0; j < n; ++j) s[j] = rnd(std::exp(s[j] - l) / static_cast<Acc>(p.max_L));
      for (int64_t d = 0; d < p.D; ++d) {
        Acc acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += s[j] * static_cast<Acc>(at<T>(p.v, h, o + j, d));
        orow[d] = from_double<T>(static_cast<double>(acc));
      }
      if (lse) *lse = static_cast<float>(l);
    }
  }

  void backward(int64_t h, int64_t o, int64_t len, int64_t n) const {
    T* dq = static_cast<T*>(p.dq);
    T* dk = static_cast<T*>(p.dk);
    T* dv = static_cast<T*>(p.dv);
    const size_t nn = static_cast<size_t>(n);
    std::vector<Acc> P(nn * nn), dS(nn * nn), s(nn);
    const Acc maxl = static_cast<Acc>(p.max_L);
    for (int64_t m = 0; m < n; ++m) {
      for (int64_t j = 0; j < n; ++j) s[j] = dot(p.q, o + m, p.k, o + j, h);
      // The plain baseline takes the saved fp32 lse, except for fp64 (a composition in fp64
      // would not round its statistic to fp32).
      // The golden refines the saved statistic to the exact one only where both are finite:
      // the op's p is exp(s - lse) with the lse it is given (spec §2.10, upstream), so a
      // non-finite saved lse reaches its row, and a non-finite score (a NaN or inf in q or k)
      // reaches the entries that contain it, not, through an exact lse, the whole sequence.
      const bool saved = plain && !std::is_same_v<T, double>;
      const Acc given = static_cast<Acc>(p.lse_in[h * p.lse_hs + o + m]);
      const Acc exact = saved ? given : lse_of(s);
      const Acc l = std::isfinite(exact) && std::isfinite(given) ? exact : given;
      const Acc delta = dot(p.o, o + m, p.grad, o + m, h);
      for (int64_t j = 0; j < n; ++j) {
        const Acc pj = std::exp(s[j] - l) / maxl;
        const Acc dp = dot(p.grad, o + m, p.v, o + j, h);
        P[m * n + j] = rnd(pj);
        dS[m * n + j] = rnd(pj * (dp - maxl * delta));
      }
    }
    for (int64_t m = 0; m < len; ++m) {
      const int64_t r = (h * p.total_L + o + m) * p.D;
      for (int64_t d = 0; d < p.D; ++d) {
        Acc gq = 0, gk = 0, gv = 0;
        if (m < n) {
          for (int64_t j = 0; j < n; ++j) {
            gq += dS[m * n + j] * static_cast<Acc>(at<T>(p.k, h, o + j, d));
            gk += dS[j * n + m] * static_cast<Acc>(at<T>(p.q, h, o + j, d));
            gv += P[j * n + m] * static_cast<Acc>(at<T>(p.grad, h, o + j, d));
          }
        }
        dq[r + d] = from_double<T>(static_cast<double>(gq));
        dk[r + d] = from_double<T>(static_cast<double>(gk));
        dv[r + d] = from_double<T>(static_cast<double>(gv));
      }
    }
  }

  void run() const {
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t b = 0; b < p.B; ++b) {
        const int64_t o = std::clamp<int64_t>(offset(p, b), 0, p.total_L);
        const int64_t e = std::clamp<int64_t>(offset(p, b + 1), o, p.total_L);
        const int64_t n = std::min(e - o, p.max_L);
        if (p.backward)
          backward(h, o, e - o, n);
        else
          forward(h, o, e - o, n);
      }
  }
};

}  // namespace

Status run_reference(const Params& p, const Context&) {
  const bool ok = visit_floating(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (p.plain) {
      using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
      Golden<T, Acc>{p, true}.run();
    } else {
      Golden<T, double>{p, false}.run();
    }
  });
  if (!ok)
    return Status(StatusCode::internal,
                  "multi_head_jagged_flash_attention: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
