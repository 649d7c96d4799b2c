// training/prepare_wy_repr_bwd/test_prepare_wy_repr_bwd.cpp: the C++ tests of the op beyond
// `recops check`'s cases: central differences of the WY loss ⟨dw, w⟩ + ⟨du, u⟩ in fp64 (w, u
// built from k, v, beta, G through A and (I + A)^-1 in the test itself), 1 and 3 threads giving
// bit-identical outputs, the refusals and their messages (torch-free; built into tests/cpp's
// recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "ops/training/common/gdn_test.h"
#include "ops/training/prepare_wy_repr_bwd/prepare_wy_repr_bwd.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;
using gdn_test::f64;

void fill(Tensor& t, int seed, double lo, double hi) {
  uint32_t s = 2654435761u * static_cast<uint32_t>(seed + 1);
  for (int64_t i = 0; i < t.view().numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    const double u = static_cast<double>(s >> 8) / 16777216.0;
    if (t.dtype() == DType::fp64)
      f64(t)[i] = lo + (hi - lo) * u;
    else
      f32(t)[i] = static_cast<float>(lo + (hi - lo) * u);
  }
}

// One sequence of T rows, H = 1, HV = 2, chunks of 16: the loss ⟨dw, w⟩ + ⟨du, u⟩ with
// A_tj = β_t (k_t·k_j) exp(G_t − G_j) (j < t in the chunk), Ai = (I + A)^-1 by forward
// substitution, w = Ai (β e k), u = Ai (β v), in fp64.
struct Wy {
  int64_t T = 20, HV = 2, K = 3, V = 2, BT = 16;
  std::vector<double> k, v, beta, g, dw, du;
  double loss() const {
    double L = 0;
    for (int64_t c0 = 0; c0 < T; c0 += BT) {
      const int64_t R = std::min(BT, T - c0);
      for (int64_t hv = 0; hv < HV; ++hv) {
        auto kd = [&](int64_t t, int64_t j) {
          double s = 0;
          for (int64_t d = 0; d < K; ++d) s += k[(c0 + t) * K + d] * k[(c0 + j) * K + d];
          return s;
        };
        auto G = [&](int64_t t) { return g[(c0 + t) * HV + hv]; };
        auto B = [&](int64_t t) { return beta[(c0 + t) * HV + hv]; };
        std::vector<double> ai(static_cast<size_t>(R * R), 0.0);
        for (int64_t t = 0; t < R; ++t) {
          ai[t * R + t] = 1;
          for (int64_t j = 0; j < t; ++j) {
            double s = 0;  // row t of Ai: −Σ_{m<t} A_tm Ai_mj
            for (int64_t m = j; m < t; ++m)
              s -= B(t) * kd(t, m) * std::exp(G(t) - G(m)) * ai[m * R + j];
            ai[t * R + j] = s;
          }
        }
        for (int64_t t = 0; t < R; ++t) {
          for (int64_t d = 0; d < K; ++d) {
            double w = 0;
            for (int64_t j = 0; j <= t; ++j)
              w += ai[t * R + j] * B(j) * std::exp(G(j)) * k[(c0 + j) * K + d];
            L += dw[((c0 + t) * HV + hv) * K + d] * w;
          }
          for (int64_t d = 0; d < V; ++d) {
            double u = 0;
            for (int64_t j = 0; j <= t; ++j)
              u += ai[t * R + j] * B(j) * v[((c0 + j) * HV + hv) * V + d];
            L += du[((c0 + t) * HV + hv) * V + d] * u;
          }
        }
      }
    }
    return L;
  }
};

// (L(x + h) − L(x − h)) / 2h of element i of x.
double central(Wy& m, std::vector<double>& x, size_t i) {
  const double h = 1e-6, x0 = x[i];
  x[i] = x0 + h;
  const double up = m.loss();
  x[i] = x0 - h;
  const double dn = m.loss();
  x[i] = x0;
  return (up - dn) / (2 * h);
}

TEST(PrepareWyReprBwd, CentralDifferencesOfTheWyLoss) {
  Wy m;
  const int64_t T = m.T, HV = m.HV, K = m.K, V = m.V;
  Tensor k = Tensor::empty({1, T, 1, K}, DType::fp64),
         v = Tensor::empty({1, T, HV, V}, DType::fp64);
  Tensor beta = Tensor::empty({1, T, HV}, DType::fp64), g = Tensor::empty({1, T, HV}, DType::fp64);
  Tensor dw = Tensor::empty({1, T, HV, K}, DType::fp64),
         du = Tensor::empty({1, T, HV, V}, DType::fp64);
  Tensor Ai = Tensor::empty({1, T, HV, 16}, DType::fp64);
  fill(k, 1, -0.6, 0.6), fill(v, 2, -1, 1), fill(beta, 3, 0.2, 0.8), fill(dw, 5, -1, 1);
  fill(du, 6, -1, 1);
  // G: the chunk-local cumsum of decays in (−0.3, 0).
  fill(g, 4, -0.3, 0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t hv = 0; hv < HV; ++hv)
      if (t % 16) f64(g)[t * HV + hv] += f64(g)[(t - 1) * HV + hv];
  auto vec = [](Tensor& t) { return std::vector<double>(f64(t), f64(t) + t.view().numel()); };
  m.k = vec(k), m.v = vec(v), m.beta = vec(beta), m.g = vec(g), m.dw = vec(dw), m.du = vec(du);
  // Ai = (I + A)^-1 per chunk, as solve_tril writes it (zeros above the diagonal and past the
  // tail).
  std::memset(Ai.data(), 0, static_cast<size_t>(T * HV * 16) * sizeof(double));
  for (int64_t c0 = 0; c0 < T; c0 += 16)
    for (int64_t hv = 0; hv < HV; ++hv) {
      const int64_t R = std::min<int64_t>(16, T - c0);
      auto at = [&](int64_t t, int64_t j) -> double& {
        return f64(Ai)[((c0 + t) * HV + hv) * 16 + j];
      };
      for (int64_t t = 0; t < R; ++t) {
        at(t, t) = 1;
        for (int64_t j = 0; j < t; ++j) {
          double s = 0;
          for (int64_t mm = j; mm < t; ++mm) {
            double kd = 0;
            for (int64_t d = 0; d < K; ++d) kd += m.k[(c0 + t) * K + d] * m.k[(c0 + mm) * K + d];
            s -= m.beta[(c0 + t) * HV + hv] * kd *
                 std::exp(m.g[(c0 + t) * HV + hv] - m.g[(c0 + mm) * HV + hv]) * at(mm, j);
          }
          at(t, j) = s;
        }
      }
    }
  Tensor dk = Tensor::empty(k.shape(), DType::fp64), dv = Tensor::empty(v.shape(), DType::fp64);
  Tensor db = Tensor::empty(beta.shape(), DType::fp64), dg = Tensor::empty(g.shape(), DType::fp32);
  PrepareWyReprBwdArgs a;
  a.k = k.view(), a.v = v.view(), a.beta = beta.view(), a.g = g.view(), a.Ai = Ai.view();
  a.dw = dw.view(), a.du = du.view();
  const TensorView dgv = dg.view();
  ASSERT_TRUE(prepare_wy_repr_bwd(a, dk.view(), dv.view(), db.view(), &dgv).ok());
  for (size_t i = 0; i < m.k.size(); ++i) EXPECT_NEAR(f64(dk)[i], central(m, m.k, i), 1e-6) << i;
  for (size_t i = 0; i < m.v.size(); ++i) EXPECT_NEAR(f64(dv)[i], central(m, m.v, i), 1e-6) << i;
  for (size_t i = 0; i < m.beta.size(); ++i)
    EXPECT_NEAR(f64(db)[i], central(m, m.beta, i), 1e-6) << i;
  // dg is the gradient with respect to G itself (A and w read G directly).
  for (size_t i = 0; i < m.g.size(); ++i)
    EXPECT_NEAR(static_cast<float*>(dg.data())[i], central(m, m.g, i), 1e-5) << i;
}

// Varlen with a zero-length sequence, GVA 2, gates: 1 and 3 threads write identical bits.
TEST(PrepareWyReprBwd, ThreadCountInvariant) {
  const int64_t T = 150, H = 2, HV = 4, K = 24, V = 10;
  Tensor k = Tensor::empty({1, T, H, K}, DType::fp32),
         v = Tensor::empty({1, T, HV, V}, DType::fp32);
  Tensor beta = Tensor::empty({1, T, HV}, DType::fp32), g = Tensor::empty({1, T, HV}, DType::fp32);
  Tensor Ai = Tensor::empty({1, T, HV, 32}, DType::fp32);
  Tensor dw = Tensor::empty({1, T, HV, K}, DType::fp32),
         du = Tensor::empty({1, T, HV, V}, DType::fp32);
  Tensor off = Tensor::empty({4}, DType::int64);
  fill(k, 1, -0.3, 0.3), fill(v, 2, -1, 1), fill(beta, 3, 0, 1), fill(g, 4, -2, 0);
  fill(Ai, 5, -0.5, 0.5), fill(dw, 6, -1, 1), fill(du, 7, -1, 1);
  const int64_t ov[] = {0, 70, 70, 150};
  std::memcpy(off.data(), ov, sizeof(ov));
  PrepareWyReprBwdArgs a;
  a.k = k.view(), a.v = v.view(), a.beta = beta.view(), a.g = g.view(), a.Ai = Ai.view();
  a.dw = dw.view(), a.du = du.view(), a.seq_offsets = off.view(), a.chunk_size = 32;
  std::vector<Tensor> outs[2];
  for (int r = 0; r < 2; ++r) {
    outs[r] = {Tensor::empty(k.shape(), DType::fp32), Tensor::empty(v.shape(), DType::fp32),
               Tensor::empty(beta.shape(), DType::fp32), Tensor::empty(g.shape(), DType::fp32)};
    Context ctx;
    ctx.num_threads = r == 0 ? 1 : 3;
    const TensorView dgv = outs[r][3].view();
    ASSERT_TRUE(
        prepare_wy_repr_bwd(a, outs[r][0].view(), outs[r][1].view(), outs[r][2].view(), &dgv, ctx)
            .ok());
  }
  for (int o = 0; o < 4; ++o)
    EXPECT_EQ(std::memcmp(outs[0][o].data(), outs[1][o].data(), outs[0][o].nbytes()), 0) << o;
}

TEST(PrepareWyReprBwd, Refusals) {
  Tensor k = Tensor::empty({1, 4, 2, 8}, DType::fp32), v = Tensor::empty({1, 4, 3, 5}, DType::fp32);
  Tensor beta = Tensor::empty({1, 4, 3}, DType::fp32),
         Ai = Tensor::empty({1, 4, 3, 16}, DType::fp32);
  Tensor dw = Tensor::empty({1, 4, 3, 8}, DType::fp32),
         du = Tensor::empty({1, 4, 3, 5}, DType::fp32);
  PrepareWyReprBwdArgs a;
  a.k = k.view(), a.v = v.view(), a.beta = beta.view(), a.Ai = Ai.view();
  a.dw = dw.view(), a.du = du.view();
  PrepareWyReprBwdShapes s;
  Status st = prepare_wy_repr_bwd_shape(a, &s);
  expect_error(st, "v's HV=3 must be a multiple of k's H=2");
  Tensor v4 = Tensor::empty({1, 4, 4, 5}, DType::fp32);
  a.v = v4.view();
  st = prepare_wy_repr_bwd_shape(a, &s);
  expect_error(st, "beta must be [B, T, HV]");
  Tensor beta4 = Tensor::empty({1, 4, 4}, DType::fp32),
         Ai4 = Tensor::empty({1, 4, 4, 16}, DType::fp32);
  Tensor dw4 = Tensor::empty({1, 4, 4, 8}, DType::fp32),
         du4 = Tensor::empty({1, 4, 4, 6}, DType::fp32);
  a.beta = beta4.view(), a.Ai = Ai4.view(), a.dw = dw4.view(), a.du = du4.view();
  st = prepare_wy_repr_bwd_shape(a, &s);
  expect_error(st, "du must be [B, T, HV, V]");
  Tensor du4ok = Tensor::empty({1, 4, 4, 5}, DType::fp32);
  a.du = du4ok.view();
  a.chunk_size = 32;
  st = prepare_wy_repr_bwd_shape(a, &s);
  expect_error(st, "chunk_size=32 must equal Ai's last dim 16");
  a.chunk_size.reset();
  ASSERT_TRUE(prepare_wy_repr_bwd_shape(a, &s).ok());
  EXPECT_FALSE(s.has_dg);
  // dg given without g; a wrong dk dtype.
  Tensor dk = Tensor::empty(k.shape(), DType::fp32), dv = Tensor::empty(v4.shape(), DType::fp32);
  Tensor db = Tensor::empty(beta4.shape(), DType::fp32), dg = Tensor::empty({1, 4, 4}, DType::fp32);
  const TensorView dgv = dg.view();
  st = prepare_wy_repr_bwd(a, dk.view(), dv.view(), db.view(), &dgv);
  expect_error(st, "dg is produced only with g");
  Tensor dk16 = Tensor::empty(k.shape(), DType::bf16);
  st = prepare_wy_repr_bwd(a, dk16.view(), dv.view(), db.view(), nullptr);
  expect_error(st, "dk must be contiguous fp32");
}

}  // namespace
}  // namespace recops
