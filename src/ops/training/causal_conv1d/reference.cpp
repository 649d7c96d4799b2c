// training/causal_conv1d/reference.cpp: the golden (accuracy.md): training_ops.md §3.7's formulas
// in fp64, one output element at a time (the taps read straight from x̃), each output rounded
// once; dweight and dbias summed over every sequence in fp64. Includes params.h and core only;
// shares no code with cpu/ or cuda/.
#include <cmath>
#include <vector>

#include "ops/training/causal_conv1d/impls.h"

namespace recops::ops::causal_conv1d_ns {
namespace {

double load(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<const double*>(p)[i];
    case DType::fp32: return static_cast<const float*>(p)[i];
    case DType::fp16: return to_double(static_cast<const Half*>(p)[i]);
    case DType::bf16: return to_double(static_cast<const BFloat16*>(p)[i]);
    case DType::int32: return static_cast<const int32_t*>(p)[i];
    case DType::int64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    default: return 0.0;
  }
}

void store(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::fp64: static_cast<double*>(p)[i] = v; break;
    case DType::fp32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::fp16: static_cast<Half*>(p)[i] = half_from_double(v); break;
    case DType::bf16: static_cast<BFloat16*>(p)[i] = bf16_from_double(v); break;
    default: break;
  }
}

double sigm(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

struct Golden {
  const Params& p;
  int64_t at(Strides3 s, int64_t b, int64_t d, int64_t t) const {
    return b * s.b + d * s.d + t * s.t;
  }
  double w(int64_t d, int64_t k) const {
    return load(p.weight, p.dtype, p.wd ? k * p.D + d : d * p.W + k);
  }
  // Sequence n: batch, start, length.
  void seq(int64_t n, int64_t* b, int64_t* start, int64_t* len) const {
    if (p.seq_offsets) {
      *b = 0;
      *start = static_cast<int64_t>(load(p.seq_offsets, p.off_dtype, n));
      *len = static_cast<int64_t>(load(p.seq_offsets, p.off_dtype, n + 1)) - *start;
    } else {
      *b = n;
      *start = 0;
      *len = p.T;
    }
  }
  double sid(int64_t b, int64_t t) const { return load(p.seq_idx, p.idx_dtype, b * p.T + t); }
  // x̃ at sequence position tau (tau < L) for the output at position t of sequence n.
  double xt(int64_t n, int64_t b, int64_t start, int64_t d, int64_t tau, int64_t t) const {
    if (tau >= 0) {
      if (p.seq_idx && sid(b, start + tau) != sid(b, start + t)) return 0.0;
      return load(p.x, p.dtype, at(p.sx, b, d, start + tau));
    }
    if (!p.init || tau < -p.S) return 0.0;
    return load(p.init, p.state_dtype, (n * p.D + d) * p.S + p.S + tau);
  }
  double z(int64_t n, int64_t b, int64_t start, int64_t d, int64_t t) const {
    double acc = p.bias ? load(p.bias, p.dtype, d) : 0.0;
    for (int64_t k = 0; k < p.W; ++k) acc += w(d, k) * xt(n, b, start, d, t - (p.W - 1) + k, t);
    return acc;
  }
  double act(double v) const { return p.silu ? v * sigm(v) : v; }
  double act_grad(double v) const {
    const double s = sigm(v);
    return p.silu ? s * (1.0 + v * (1.0 - s)) : 1.0;
  }
};

void forward(const Params& p) {
  const Golden g{p};
  for (int64_t n = 0; n < p.N; ++n) {
    int64_t b, start, L;
    g.seq(n, &b, &start, &L);
    for (int64_t d = 0; d < p.D; ++d) {
      for (int64_t t = 0; t < L; ++t) {
        double v = g.act(g.z(n, b, start, d, t));
        if (p.residual) v += load(p.residual, p.dtype, g.at(p.sres, b, d, start + t));
        store(p.y, p.dtype, g.at(p.sy, b, d, start + t), v);
      }
      if (!p.final_state) continue;
      // The last S entries of [init-or-zeros (S) ‖ x (L)]: entry j is position L + j.
      for (int64_t j = 0; j < p.S; ++j) {
        const int64_t c = L + j;
        const double v =
            c >= p.S ? load(p.x, p.dtype, g.at(p.sx, b, d, start + c - p.S))
                     : (p.init ? load(p.init, p.state_dtype, (n * p.D + d) * p.S + c) : 0.0);
        store(p.final_state, p.state_dtype, (n * p.D + d) * p.S + j, v);
      }
    }
  }
}

void backward(const Params& p) {
  const Golden g{p};
  std::vector<double> dw(static_cast<size_t>(p.D * p.W), 0.0), db(static_cast<size_t>(p.D), 0.0);
  std::vector<double> dz;
  for (int64_t n = 0; n < p.N; ++n) {
    int64_t b, start, L;
    g.seq(n, &b, &start, &L);
    for (int64_t d = 0; d < p.D; ++d) {
      dz.assign(static_cast<size_t>(L), 0.0);
      for (int64_t t = 0; t < L; ++t) {
        const double zt = g.z(n, b, start, d, t);
        dz[t] = load(p.dy, p.dtype, g.at(p.sdy, b, d, start + t)) * g.act_grad(zt);
        db[d] += dz[t];
        for (int64_t k = 0; k < p.W; ++k)
          dw[d * p.W + k] += dz[t] * g.xt(n, b, start, d, t - (p.W - 1) + k, t);
      }
      auto dfs = [&](int64_t j) {  // d_final_state[n, d, j]
        return p.dfinal ? load(p.dfinal, p.state_dtype, (n * p.D + d) * p.S + j) : 0.0;
      };
      // Positions tau in [-S, L): the gradient of x̃_tau.
      for (int64_t tau = -p.S; tau < L; ++tau) {
        double acc = 0.0;
        for (int64_t k = 0; k < p.W; ++k) {
          const int64_t t = tau + (p.W - 1) - k;
          if (t < 0 || t >= L) continue;
          if (tau >= 0 && p.seq_idx && g.sid(b, start + tau) != g.sid(b, start + t)) continue;
          acc += g.w(d, k) * dz[t];
        }
        const int64_t c = tau + p.S;  // position in [init ‖ x]
        if (c >= L) acc += dfs(c - L);
        if (tau >= 0) {
          store(p.dx, p.dtype, g.at(p.sdx, b, d, start + tau), acc);
          if (p.dres)
            store(p.dres, p.dtype, g.at(p.sdres, b, d, start + tau),
                  load(p.dy, p.dtype, g.at(p.sdy, b, d, start + tau)));
        } else if (p.dinit) {
          store(p.dinit, p.state_dtype, (n * p.D + d) * p.S + c, acc);
        }
      }
    }
  }
  for (int64_t d = 0; d < p.D; ++d) {
    for (int64_t k = 0; k < p.W; ++k)
      store(p.dweight, p.dtype, p.wd ? k * p.D + d : d * p.W + k, dw[d * p.W + k]);
    if (p.dbias) store(p.dbias, p.dtype, d, db[d]);
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.backward)
    backward(p);
  else
    forward(p);
  return Status::Ok();
}

}  // namespace recops::ops::causal_conv1d_ns
