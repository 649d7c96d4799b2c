// training/norm_mul_dropout/reference.cpp: the golden (accuracy.md): the README's formulas in fp64,
// one row and group at a time, each output rounded once; dweight and dbias summed in fp64. The
// dropout mask is computed here again from the README's written definition of the RNG (no code
// shared with training/common/counter_rng.h or cpu/).
#include <cmath>
#include <vector>

#include "ops/training/norm_mul_dropout/impls.h"

namespace recops::ops::norm_mul_dropout_ns {
namespace {
// The README's RNG: the multiplier of e + 1, then three xor-shift/multiply steps.
double golden_uniform(uint64_t seed, uint64_t e) {
  uint64_t z = seed + (e + 1) * uint64_t{11400714819323198485u};
  z ^= z >> 30;
  z *= uint64_t{13787848793156543929u};
  z ^= z >> 27;
  z *= uint64_t{10723151780598845931u};
  z ^= z >> 31;
  return static_cast<double>(z >> 40) / 16777216.0;
}

template <class T>
void compute(const Params& p) {
  const T* x = static_cast<const T*>(p.x);
  const T* u = static_cast<const T*>(p.u);
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  const T* dout = static_cast<const T*>(p.grad);
  const int64_t D = p.D, H = p.heads, L = D / H, W = p.concat_ux ? 3 * D : D;
  const int64_t nw = p.group_norm ? H : D;
  const double keep_scale = 1.0 / (1.0 - static_cast<double>(p.ratio));
  // drop(v) at output column c of row i.
  auto drop = [&](double v, int64_t i, int64_t c) {
    if (!p.dropout) return v;
    const uint64_t e = p.offset + static_cast<uint64_t>(i * W + c);
    return golden_uniform(p.seed, e) >= static_cast<double>(p.ratio) ? v * keep_scale : 0.0;
  };
  auto widx = [&](int64_t d) { return p.group_norm ? d / L : d; };
  std::vector<double> dw(static_cast<size_t>(nw), 0.0), db(static_cast<size_t>(nw), 0.0);
  std::vector<double> n(static_cast<size_t>(L)), gy(static_cast<size_t>(L));
  const int64_t yoff = p.concat_ux ? 2 * D : 0;
  for (int64_t i = 0; i < p.rows; ++i) {
    for (int64_t k = 0; k < H; ++k) {
      const int64_t c0 = k * L, base = i * D + c0;
      double mu = 0;
      for (int64_t j = 0; j < L; ++j) mu += to_double(x[base + j]);
      mu /= static_cast<double>(L);
      double var = 0;
      for (int64_t j = 0; j < L; ++j) {
        const double c = to_double(x[base + j]) - mu;
        var += c * c;
      }
      const double r = 1.0 / std::sqrt(var / static_cast<double>(L) + p.eps);
      for (int64_t j = 0; j < L; ++j) n[j] = (to_double(x[base + j]) - mu) * r;
      auto ln = [&](int64_t j) {
        return n[j] * to_double(w[widx(c0 + j)]) + to_double(b[widx(c0 + j)]);
      };
      if (!p.backward) {
        T* out = static_cast<T*>(p.out) + i * W;
        for (int64_t j = 0; j < L; ++j) {
          const int64_t d = c0 + j;
          const double uv = to_double(u[base + j]), xv = to_double(x[base + j]);
          out[yoff + d] = from_double<T>(drop(uv * ln(j), i, yoff + d));
          if (p.concat_ux) {
            out[d] = from_double<T>(drop(uv, i, d));
            out[D + d] = from_double<T>(drop(xv, i, D + d));
          }
        }
        continue;
      }
      const T* go = dout + i * W;
      double mg = 0, mgn = 0;
      for (int64_t j = 0; j < L; ++j) {
        const int64_t d = c0 + j;
        gy[j] = drop(to_double(go[yoff + d]), i, yoff + d);
        const double g = gy[j] * to_double(u[base + j]) * to_double(w[widx(d)]);
        mg += g;
        mgn += g * n[j];
      }
      mg /= static_cast<double>(L);
      mgn /= static_cast<double>(L);
      for (int64_t j = 0; j < L; ++j) {
        const int64_t d = c0 + j;
        const double uv = to_double(u[base + j]);
        const double g = gy[j] * uv * to_double(w[widx(d)]);
        double dxv = r * (g - mg - n[j] * mgn), duv = gy[j] * ln(j);
        if (p.concat_ux) {
          duv += drop(to_double(go[d]), i, d);
          dxv += drop(to_double(go[D + d]), i, D + d);
        }
        static_cast<T*>(p.out)[base + j] = from_double<T>(dxv);
        static_cast<T*>(p.du)[base + j] = from_double<T>(duv);
        dw[static_cast<size_t>(widx(d))] += gy[j] * uv * n[j];
        db[static_cast<size_t>(widx(d))] += gy[j] * uv;
      }
    }
  }
  if (!p.backward) return;
  for (int64_t k = 0; k < nw; ++k) {
    static_cast<T*>(p.dweight)[k] = from_double<T>(dw[static_cast<size_t>(k)]);
    static_cast<T*>(p.dbias)[k] = from_double<T>(db[static_cast<size_t>(k)]);
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { compute<decltype(t)>(p); }))
    return Status(StatusCode::internal, "norm_mul_dropout: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::norm_mul_dropout_ns
