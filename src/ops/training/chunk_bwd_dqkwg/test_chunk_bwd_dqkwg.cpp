// training/chunk_bwd_dqkwg/test_chunk_bwd_dqkwg.cpp: the C++ tests of the op beyond `recops
// check`'s cases: a hand-computed two-row chunk, dG against a finite difference of the forward
// loss (chunk_fwd_o's o and the next state) in fp64, the GVA group sum, the optional outputs and
// the refusals with their messages (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/training/chunk_bwd_dqkwg/chunk_bwd_dqkwg.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f64;
using gdn_test::filled;

Tensor nans(const Shape& s) {
  return filled(s, [](int64_t) { return static_cast<double>(NAN); });
}

// T = 2, H = HV = 1, K = 1, V = 1, chunk 16, scale 0.5: every output by hand.
TEST(ChunkBwdDqkwg, HandComputedChunk) {
  const double q[] = {1, -2}, k[] = {0.5, 2}, v[] = {3, -1}, g[] = {-0.5, -1.25}, h = 0.75, dh = -2,
               d_o[] = {1.5, 0.5}, dv2[] = {2, -4};
  auto t2 = [](const double* x) {
    Tensor t = Tensor::empty({1, 2, 1, 1}, DType::fp64);
    f64(t)[0] = x[0], f64(t)[1] = x[1];
    return t;
  };
  Tensor tq = t2(q), tk = t2(k), tv = t2(v), tdo = t2(d_o), tdv = t2(dv2), tw = t2(q);
  Tensor tg = Tensor::empty({1, 2, 1}, DType::fp64);
  f64(tg)[0] = g[0], f64(tg)[1] = g[1];
  Tensor th = Tensor::empty({1, 1, 1, 1, 1}, DType::fp64);
  Tensor tdh = Tensor::empty({1, 1, 1, 1, 1}, DType::fp64);
  f64(th)[0] = h, f64(tdh)[0] = dh;
  Tensor dq = nans({1, 2, 1, 1}), dk = nans({1, 2, 1, 1}), dw = nans({1, 2, 1, 1});
  Tensor dg = Tensor::empty({1, 2, 1}, DType::fp32);
  ChunkBwdDqkwgArgs a;
  a.q = tq.view(), a.k = tk.view(), a.v_new = tv.view(), a.w = tw.view(), a.g = tg.view();
  a.h = th.view(), a.dh = tdh.view(), a.d_o = tdo.view(), a.dv2 = tdv.view();
  a.scale = 0.5;
  a.chunk_size = 16;
  const TensorView dwv = dw.view(), dgv = dg.view();
  ASSERT_TRUE(chunk_bwd_dqkwg(a, dq.view(), dk.view(), &dwv, &dgv).ok());
  const double s = 0.5;
  const double ds00 = s * d_o[0] * v[0], ds10 = s * std::exp(g[1] - g[0]) * d_o[1] * v[0],
               ds11 = s * d_o[1] * v[1];
  const double dq0 = s * std::exp(g[0]) * h * d_o[0] + ds00 * k[0];
  const double dq1 = s * std::exp(g[1]) * h * d_o[1] + ds10 * k[0] + ds11 * k[1];
  const double dk0i = std::exp(g[1] - g[0]) * dh * v[0], dk1i = dh * v[1];
  const double dk0 = dk0i + ds00 * q[0] + ds10 * q[1], dk1 = dk1i + ds11 * q[1];
  EXPECT_NEAR(f64(dq)[0], dq0, 1e-14);
  EXPECT_NEAR(f64(dq)[1], dq1, 1e-14);
  EXPECT_NEAR(f64(dk)[0], dk0, 1e-14);
  EXPECT_NEAR(f64(dk)[1], dk1, 1e-14);
  EXPECT_NEAR(f64(dw)[0], -h * dv2[0], 1e-14);
  EXPECT_NEAR(f64(dw)[1], -h * dv2[1], 1e-14);
  const float* dgp = static_cast<float*>(dg.data());
  EXPECT_NEAR(dgp[0], q[0] * dq0 - k[0] * dk0, 1e-5);
  EXPECT_NEAR(dgp[1], q[1] * dq1 - k[1] * dk1 + std::exp(g[1]) * dh * h + k[0] * dk0i + k[1] * dk1i,
              1e-5);
}

// One chunk's loss ℓ = Σ_t ⟨do_t, o_t⟩ + ⟨dh, S'⟩ with o (chunk_fwd_o's formula) and the next
// state S' = exp(G_L)·h + Σ_t exp(G_L − G_t)·k_t ⊗ v_t, for one head: dG is its derivative in G
// (central differences in fp64).
double chunk_loss(const std::vector<double>& q, const std::vector<double>& k,
                  const std::vector<double>& v, const std::vector<double>& G,
                  const std::vector<double>& h, const std::vector<double>& dh,
                  const std::vector<double>& d_o, int64_t R, int64_t K, int64_t V, double s) {
  double l = 0;
  for (int64_t t = 0; t < R; ++t)
    for (int64_t c = 0; c < V; ++c) {
      double o = 0;
      for (int64_t d = 0; d < K; ++d) o += s * std::exp(G[t]) * h[d * V + c] * q[t * K + d];
      for (int64_t j = 0; j <= t; ++j) {
        double qk = 0;
        for (int64_t d = 0; d < K; ++d) qk += q[t * K + d] * k[j * K + d];
        o += s * std::exp(G[t] - G[j]) * qk * v[j * V + c];
      }
      l += d_o[t * V + c] * o;
    }
  for (int64_t d = 0; d < K; ++d)
    for (int64_t c = 0; c < V; ++c) {
      double st = std::exp(G[R - 1]) * h[d * V + c];
      for (int64_t t = 0; t < R; ++t) st += std::exp(G[R - 1] - G[t]) * k[t * K + d] * v[t * V + c];
      l += dh[d * V + c] * st;
    }
  return l;
}

TEST(ChunkBwdDqkwg, DgIsTheGradientOfTheChunkLoss) {
  const int64_t R = 5, K = 3, V = 2;
  Tensor q = filled({1, R, 1, K}, [](int64_t i) { return std::sin(1.3 * i + 0.2); });
  Tensor k = filled({1, R, 1, K}, [](int64_t i) { return std::cos(0.7 * i + 0.1); });
  Tensor v = filled({1, R, 1, V}, [](int64_t i) { return std::sin(2.1 * i - 0.4); });
  Tensor d_o = filled({1, R, 1, V}, [](int64_t i) { return std::cos(1.7 * i + 0.9); });
  Tensor g = filled({1, R, 1}, [](int64_t i) { return -0.3 * (i + 1) - 0.05 * i * i; });
  Tensor h = filled({1, 1, 1, K, V}, [](int64_t i) { return 0.5 - 0.2 * i; });
  Tensor dh = filled({1, 1, 1, K, V}, [](int64_t i) { return std::sin(0.9 * i + 1.0); });
  Tensor dq = nans({1, R, 1, K}), dk = nans({1, R, 1, K});
  Tensor dg = Tensor::empty({1, R, 1}, DType::fp32);
  ChunkBwdDqkwgArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.g = g.view(), a.h = h.view();
  a.dh = dh.view(), a.d_o = d_o.view();
  a.chunk_size = 16;
  const TensorView dgv = dg.view();
  ASSERT_TRUE(chunk_bwd_dqkwg(a, dq.view(), dk.view(), nullptr, &dgv).ok());
  auto vec = [](Tensor& t) { return std::vector<double>(f64(t), f64(t) + t.view().numel()); };
  const double s = 1 / std::sqrt(3.0), eps = 1e-6;
  // The central difference of the loss in element e of q (0), k (1) or G (2).
  auto fd = [&](int which, int64_t e) {
    double l[2];
    for (int side = 0; side < 2; ++side) {
      std::vector<double> x[3] = {vec(q), vec(k), vec(g)};
      x[which][static_cast<size_t>(e)] += side ? -eps : eps;
      l[side] = chunk_loss(x[0], x[1], vec(v), x[2], vec(h), vec(dh), vec(d_o), R, K, V, s);
    }
    return (l[0] - l[1]) / (2 * eps);
  };
  for (int64_t t = 0; t < R; ++t)
    EXPECT_NEAR(static_cast<float*>(dg.data())[t], fd(2, t), 1e-5) << "t=" << t;
  // dq and dk are the gradients in q and k of the same loss.
  for (int64_t e = 0; e < R * K; ++e) {
    EXPECT_NEAR(f64(dq)[e], fd(0, e), 1e-7) << "e=" << e;
    EXPECT_NEAR(f64(dk)[e], fd(1, e), 1e-7) << "e=" << e;
  }
}

// HV = 2H: dq and dk of key head h are the sums of value heads 2h and 2h+1 (each computed alone
// with H = HV = 1 on that value head's tensors).
TEST(ChunkBwdDqkwg, GvaSumsTheGroup) {
  const int64_t T = 20, H = 2, HV = 4, K = 3, V = 2, NT = 2;
  Tensor q = filled({1, T, H, K}, [](int64_t i) { return std::sin(0.37 * i); });
  Tensor k = filled({1, T, H, K}, [](int64_t i) { return std::cos(0.53 * i); });
  Tensor v = filled({1, T, HV, V}, [](int64_t i) { return std::sin(0.71 * i + 1); });
  Tensor d_o = filled({1, T, HV, V}, [](int64_t i) { return std::cos(0.29 * i + 2); });
  Tensor g = filled({1, T, HV}, [](int64_t i) { return -0.02 * static_cast<double>(i % 17); });
  Tensor h = filled({1, NT, HV, K, V}, [](int64_t i) { return std::sin(0.13 * i); });
  Tensor dh = filled({1, NT, HV, K, V}, [](int64_t i) { return std::cos(0.17 * i); });
  Tensor dq = nans({1, T, H, K}), dk = nans({1, T, H, K});
  Tensor dg = Tensor::empty({1, T, HV}, DType::fp32);
  ChunkBwdDqkwgArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.g = g.view(), a.h = h.view();
  a.dh = dh.view(), a.d_o = d_o.view();
  a.chunk_size = 16;
  const TensorView dgv = dg.view();
  ASSERT_TRUE(chunk_bwd_dqkwg(a, dq.view(), dk.view(), nullptr, &dgv).ok());
  // Slice value head hv (and its key head) into a one-head problem.
  std::vector<double> sum_q(static_cast<size_t>(T * H * K)), sum_k(sum_q.size());
  for (int64_t hv = 0; hv < HV; ++hv) {
    const int64_t hk = hv / 2;
    Tensor q1 = Tensor::empty({1, T, 1, K}, DType::fp64),
           k1 = Tensor::empty({1, T, 1, K}, DType::fp64);
    Tensor v1 = Tensor::empty({1, T, 1, V}, DType::fp64),
           o1 = Tensor::empty({1, T, 1, V}, DType::fp64);
    Tensor g1 = Tensor::empty({1, T, 1}, DType::fp64);
    Tensor h1 = Tensor::empty({1, NT, 1, K, V}, DType::fp64);
    Tensor dh1 = Tensor::empty({1, NT, 1, K, V}, DType::fp64);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t c = 0; c < K; ++c) {
        f64(q1)[t * K + c] = f64(q)[(t * H + hk) * K + c];
        f64(k1)[t * K + c] = f64(k)[(t * H + hk) * K + c];
      }
      for (int64_t c = 0; c < V; ++c) {
        f64(v1)[t * V + c] = f64(v)[(t * HV + hv) * V + c];
        f64(o1)[t * V + c] = f64(d_o)[(t * HV + hv) * V + c];
      }
      f64(g1)[t] = f64(g)[t * HV + hv];
    }
    for (int64_t c = 0; c < NT; ++c)
      for (int64_t e = 0; e < K * V; ++e) {
        f64(h1)[c * K * V + e] = f64(h)[(c * HV + hv) * K * V + e];
        f64(dh1)[c * K * V + e] = f64(dh)[(c * HV + hv) * K * V + e];
      }
    Tensor dq1 = nans({1, T, 1, K}), dk1 = nans({1, T, 1, K});
    Tensor dg1 = Tensor::empty({1, T, 1}, DType::fp32);
    ChunkBwdDqkwgArgs b;
    b.q = q1.view(), b.k = k1.view(), b.v_new = v1.view(), b.g = g1.view(), b.h = h1.view();
    b.dh = dh1.view(), b.d_o = o1.view();
    b.scale = 1 / std::sqrt(3.0);
    b.chunk_size = 16;
    const TensorView dg1v = dg1.view();
    ASSERT_TRUE(chunk_bwd_dqkwg(b, dq1.view(), dk1.view(), nullptr, &dg1v).ok());
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t c = 0; c < K; ++c) {
        sum_q[static_cast<size_t>((t * H + hk) * K + c)] += f64(dq1)[t * K + c];
        sum_k[static_cast<size_t>((t * H + hk) * K + c)] += f64(dk1)[t * K + c];
      }
      EXPECT_EQ(static_cast<float*>(dg.data())[t * HV + hv], static_cast<float*>(dg1.data())[t]);
    }
  }
  for (int64_t e = 0; e < T * H * K; ++e) {
    EXPECT_NEAR(f64(dq)[e], sum_q[static_cast<size_t>(e)], 1e-13);
    EXPECT_NEAR(f64(dk)[e], sum_k[static_cast<size_t>(e)], 1e-13);
  }
}

// Each output element is written by one (chunk, key head) item: 1 and 3 threads give the same
// bits (varlen, GVA, gates, dw).
TEST(ChunkBwdDqkwg, ThreadCountDoesNotChangeBits) {
  const int64_t T = 150, H = 2, HV = 4, K = 16, V = 8, NT = 6;
  auto f32 = [](const Shape& s, double scale) {
    Tensor t = Tensor::empty(s, DType::fp32);
    float* d = static_cast<float*>(t.data());
    for (int64_t i = 0; i < t.view().numel(); ++i)
      d[i] = static_cast<float>(scale * std::sin(0.61 * static_cast<double>(i) + scale));
    return t;
  };
  Tensor q = f32({1, T, H, K}, 1), k = f32({1, T, H, K}, 0.9), v = f32({1, T, HV, V}, 1.1);
  Tensor w = f32({1, T, HV, K}, 0.5), d_o = f32({1, T, HV, V}, 0.7), dv2 = f32({1, T, HV, V}, 1.3);
  Tensor h = f32({1, NT, HV, K, V}, 0.3), dh = f32({1, NT, HV, K, V}, 0.4);
  Tensor g = f32({1, T, HV}, 0.2);
  float* gd = static_cast<float*>(g.data());
  for (int64_t i = 0; i < T * HV; ++i) gd[i] = -std::fabs(gd[i]) * static_cast<float>(i / HV % 32);
  Tensor off = Tensor::empty({4}, DType::int64);
  const int64_t ov[] = {0, 70, 70, 150};  // chunks of 32: 3 + 0 + 3 = 6
  for (int i = 0; i < 4; ++i) static_cast<int64_t*>(off.data())[i] = ov[i];
  ChunkBwdDqkwgArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.w = w.view(), a.g = g.view();
  a.h = h.view(), a.dh = dh.view(), a.d_o = d_o.view(), a.dv2 = dv2.view();
  a.seq_offsets = off.view();
  a.chunk_size = 32;
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 3}) {
    Tensor dq = f32({1, T, H, K}, 0), dk = f32({1, T, H, K}, 0), dw = f32({1, T, HV, K}, 0);
    Tensor dg = f32({1, T, HV}, 0);
    Context ctx;
    ctx.num_threads = threads;
    const TensorView dwv = dw.view(), dgv = dg.view();
    ASSERT_TRUE(chunk_bwd_dqkwg(a, dq.view(), dk.view(), &dwv, &dgv, ctx).ok());
    std::vector<float> all;
    for (Tensor* t : {&dq, &dk, &dw, &dg}) {
      const float* d = static_cast<const float*>(t->data());
      all.insert(all.end(), d, d + t->view().numel());
    }
    runs.push_back(all);
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t i = 0; i < runs[0].size(); ++i) {
    ASSERT_TRUE(std::isfinite(runs[0][i])) << i;
    ASSERT_EQ(runs[0][i], runs[1][i]) << i;
  }
}

struct Shapes {
  Shape q, k, v, h;
  int64_t bt = 64;
  bool w = true, dv2 = true, give_dw = true;
  Shape dq;
  DType qt = DType::fp32, dqt = DType::fp32;
};

Status call(const Shapes& s) {
  Tensor q = Tensor::empty(s.q, s.qt), k = Tensor::empty(s.k, DType::fp32);
  Tensor v = Tensor::empty(s.v, DType::fp32), h = Tensor::empty(s.h, DType::fp32);
  Tensor w = Tensor::empty({s.v[0], s.v[1], s.v[2], s.q[3]}, DType::fp32);
  Tensor dq = Tensor::empty(s.dq, s.dqt), dk = Tensor::empty(s.q, DType::fp32);
  Tensor dw = Tensor::empty(w.view().shape(), DType::fp32);
  ChunkBwdDqkwgArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view(), a.dh = h.view();
  a.d_o = v.view();
  if (s.w) a.w = w.view();
  if (s.dv2) a.dv2 = v.view();
  a.chunk_size = s.bt;
  const TensorView dwv = dw.view();
  return chunk_bwd_dqkwg(a, dq.view(), dk.view(), s.give_dw ? &dwv : nullptr, nullptr);
}

TEST(ChunkBwdDqkwg, Refusals) {
  const Shapes ok{{1, 70, 2, 8}, {1, 70, 2, 8}, {1, 70, 4, 5}, {1, 2, 4, 8, 5}};
  Shapes s = ok;
  s.dq = s.q;
  EXPECT_TRUE(call(s).ok());
  const Shapes base = s;
  s.v = {1, 70, 3, 5}, s.h = {1, 2, 3, 8, 5};
  expect_error(call(s), "v_new's HV=3 must be a multiple of q's H=2");
  s = base, s.k = {1, 70, 2, 7};
  expect_error(call(s), "k must be [B, T, H, K]");
  s = base, s.h = {1, 3, 4, 8, 5};
  expect_error(call(s), "h must be [B, NT, HV, K, V]");
  s = base, s.bt = 48;
  expect_error(call(s), "chunk_size=48 must be 16, 32 or 64");
  s = base, s.dv2 = false;
  expect_error(call(s), "w and dv2 are given together or not at all");
  s = base, s.give_dw = false;
  expect_error(call(s), "dw is required with w");
  s = base, s.w = s.dv2 = false;
  expect_error(call(s), "dw is produced only with w");
  s = base, s.dq = {1, 70, 4, 8};
  expect_error(call(s), "dq must be contiguous [1, 70, 2, 8]");
  s = base, s.dqt = DType::bf16;
  expect_error(call(s), "of q's dtype fp32");
  s = base, s.qt = DType::int32;
  expect_error(call(s), "q must be [B, T, H, K] of fp64, fp32, fp16 or bf16");
}

TEST(ChunkBwdDqkwg, ShapesFollowTheArguments) {
  Tensor q = Tensor::empty({2, 7, 3, 5}, DType::bf16), k = Tensor::empty({2, 7, 3, 5}, DType::fp16);
  Tensor v = Tensor::empty({2, 7, 6, 4}, DType::fp32),
         h = Tensor::empty({2, 1, 6, 5, 4}, DType::fp32);
  Tensor w = Tensor::empty({2, 7, 6, 5}, DType::fp64), g = Tensor::empty({2, 7, 6}, DType::bf16);
  ChunkBwdDqkwgArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view(), a.dh = h.view();
  a.d_o = v.view();
  a.chunk_size = 16;
  ChunkBwdDqkwgShapes s;
  ASSERT_TRUE(chunk_bwd_dqkwg_shape(a, &s).ok());
  EXPECT_EQ(s.dq, (Shape{2, 7, 3, 5}));
  EXPECT_EQ(s.dq_dtype, DType::bf16);
  EXPECT_EQ(s.dk_dtype, DType::fp16);
  EXPECT_FALSE(s.has_dw);
  EXPECT_FALSE(s.has_dg);
  a.w = w.view(), a.dv2 = v.view(), a.g = g.view();
  ASSERT_TRUE(chunk_bwd_dqkwg_shape(a, &s).ok());
  EXPECT_TRUE(s.has_dw && s.has_dg);
  EXPECT_EQ(s.dw, (Shape{2, 7, 6, 5}));
  EXPECT_EQ(s.dw_dtype, DType::fp64);
  EXPECT_EQ(s.dg, (Shape{2, 7, 6}));
}

}  // namespace
}  // namespace recops
