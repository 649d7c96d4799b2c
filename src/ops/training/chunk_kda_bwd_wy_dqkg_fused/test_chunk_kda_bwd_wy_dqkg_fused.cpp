// training/chunk_kda_bwd_wy_dqkg_fused/test_chunk_kda_bwd_wy_dqkg_fused.cpp: the C++ tests of the
// op beyond `recops check`'s cases: every output against central differences of the chunk loss in
// fp64 (one chunk, written from the KDA forward formulas), the CPU path against the fp64 golden
// with GVA, varlen and tail chunks, gate_log2, empty inputs and the refusals with their messages
// (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/chunk_kda_bwd_wy_dqkg_fused.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;
using gdn_test::f64;
using gdn_test::filled;

using Vec = std::vector<double>;

// The inputs of one case (fp64) and its outputs.
struct Case {
  int64_t B, T, H, HV, K, V, BT, NT;
  Tensor q, k, v, vn, g, beta, A, h, d_o, dh, dv2, off;
  bool packed = false;
};

struct Outs {
  Tensor dq, dk, dv, dbeta, dg, dA;
  ChunkKdaBwdWyDqkgFusedOut views() {
    return {dq.view(), dk.view(), dv.view(), dbeta.view(), dg.view(), dA.view()};
  }
};

Outs outputs(const Case& c) {
  auto nan32 = [](const Shape& s) {
    Tensor t = Tensor::empty(s, DType::fp32);
    for (int64_t i = 0; i < t.view().numel(); ++i) f32(t)[i] = NAN;
    return t;
  };
  Outs o;
  o.dq = nan32({c.B, c.T, c.H, c.K});
  o.dk = nan32({c.B, c.T, c.H, c.K});
  o.dv = filled({c.B, c.T, c.HV, c.V}, [](int64_t) { return static_cast<double>(NAN); });
  o.dbeta = nan32({c.B, c.T, c.HV});
  o.dg = nan32({c.B, c.T, c.HV, c.K});
  o.dA = nan32({c.B, c.T, c.HV, c.BT});
  return o;
}

ChunkKdaBwdWyDqkgFusedArgs args_of(const Case& c) {
  ChunkKdaBwdWyDqkgFusedArgs a;
  a.q = c.q.view(), a.k = c.k.view(), a.v = c.v.view(), a.v_new = c.vn.view(), a.g = c.g.view();
  a.beta = c.beta.view(), a.Akk = c.A.view(), a.h = c.h.view(), a.d_o = c.d_o.view();
  a.dh = c.dh.view(), a.dv2 = c.dv2.view();
  a.chunk_size = c.BT;
  if (c.packed) a.seq_offsets = c.off.view();
  return a;
}

// Random-looking fp64 inputs; G is a per-channel decreasing cumsum inside each chunk of bt rows of
// each sequence (`lens`, whose total replaces T, or B rows of T); Akk holds random unit lower
// triangular blocks.
Case make_case(int64_t B, int64_t T, int64_t H, int64_t HV, int64_t K, int64_t V, int64_t bt,
               const std::vector<int64_t>& lens = {}) {
  if (!lens.empty()) {  // packed: T is the sequences' total
    T = 0;
    for (int64_t n : lens) T += n;
  }
  Case c{B, T, H, HV, K, V, bt, 0};
  std::vector<int64_t> starts;  // every chunk's first row and its length
  std::vector<int64_t> sizes;
  if (!lens.empty()) {
    int64_t r = 0;
    for (int64_t n : lens) {
      for (int64_t s = 0; s < n; s += bt)
        starts.push_back(r + s), sizes.push_back(std::min(bt, n - s));
      r += n;
    }
    c.packed = true;
    c.off = Tensor::empty({static_cast<int64_t>(lens.size()) + 1}, DType::int64);
    int64_t* o = static_cast<int64_t*>(c.off.data());
    o[0] = 0;
    for (size_t i = 0; i < lens.size(); ++i) o[i + 1] = o[i] + lens[i];
    c.NT = static_cast<int64_t>(starts.size());
  } else {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < T; s += bt)
        starts.push_back(b * T + s), sizes.push_back(std::min(bt, T - s));
    c.NT = (T + bt - 1) / bt;
  }
  c.q = filled({B, T, H, K}, [](int64_t i) { return 0.4 * std::sin(1.3 * i + 0.2); });
  c.k = filled({B, T, H, K}, [](int64_t i) { return 0.4 * std::cos(0.7 * i + 0.1); });
  c.v = filled({B, T, HV, V}, [](int64_t i) { return std::sin(2.1 * i - 0.4); });
  c.vn = filled({B, T, HV, V}, [](int64_t i) { return std::cos(0.3 * i + 0.5); });
  c.d_o = filled({B, T, HV, V}, [](int64_t i) { return std::cos(1.7 * i + 0.9); });
  c.dv2 = filled({B, T, HV, V}, [](int64_t i) { return std::sin(0.45 * i + 1.1); });
  c.beta = filled({B, T, HV}, [](int64_t i) { return 0.3 + 0.5 * std::abs(std::sin(0.9 * i)); });
  c.h = filled({B, c.NT, HV, K, V}, [](int64_t i) { return 0.5 * std::sin(0.37 * i + 0.3); });
  c.dh = filled({B, c.NT, HV, K, V}, [](int64_t i) { return std::cos(0.53 * i - 0.2); });
  c.g = filled({B, T, HV, K}, [](int64_t) { return 0.0; });
  c.A = filled({B, T, HV, bt}, [](int64_t) { return 0.0; });
  for (size_t ch = 0; ch < starts.size(); ++ch)
    for (int64_t hv = 0; hv < HV; ++hv)
      for (int64_t t = 0; t < sizes[ch]; ++t) {
        const int64_t r = starts[ch] + t;
        for (int64_t d = 0; d < K; ++d) {
          const double step = -0.05 - 0.3 * std::abs(std::sin(0.61 * (r * HV + hv) * K + 1.7 * d));
          f64(c.g)[(r * HV + hv) * K + d] =
              (t ? f64(c.g)[((r - 1) * HV + hv) * K + d] : 0.0) + step;
        }
        for (int64_t j = 0; j <= t; ++j)
          f64(c.A)[(r * HV + hv) * bt + j] = j == t ? 1.0 : 0.3 * std::sin(0.77 * r + 1.3 * j + hv);
      }
  return c;
}

void expect_close(Tensor& got, Tensor& want, double tol, const char* what) {
  const int64_t n = got.view().numel();
  ASSERT_EQ(n, want.view().numel()) << what;
  for (int64_t i = 0; i < n; ++i) {
    const double a = got.view().dtype == DType::fp64 ? f64(got)[i] : f32(got)[i];
    const double b = want.view().dtype == DType::fp64 ? f64(want)[i] : f32(want)[i];
    ASSERT_NEAR(a, b, tol * (1 + std::abs(b))) << what << "[" << i << "]";
  }
}

// The CPU path against the golden (the plain baseline of fp64 inputs is the fp64 golden).
void cpu_matches_golden(const Case& c, bool log2) {
  Outs cpu = outputs(c), gold = outputs(c);
  ChunkKdaBwdWyDqkgFusedArgs a = args_of(c);
  a.gate_log2 = log2;
  ASSERT_TRUE(chunk_kda_bwd_wy_dqkg_fused(a, cpu.views()).ok());
  ASSERT_TRUE(chunk_kda_bwd_wy_dqkg_fused_plain(a, gold.views()).ok());
  expect_close(cpu.dq, gold.dq, 1e-6, "dq");
  expect_close(cpu.dk, gold.dk, 1e-6, "dk");
  expect_close(cpu.dv, gold.dv, 1e-12, "dv");
  expect_close(cpu.dbeta, gold.dbeta, 1e-6, "dbeta");
  expect_close(cpu.dg, gold.dg, 1e-6, "dg");
  expect_close(cpu.dA, gold.dA, 1e-6, "dA");
}

TEST(ChunkKdaBwdWyDqkgFused, CpuMatchesGoldenGvaTails) {
  cpu_matches_golden(make_case(2, 37, 2, 4, 5, 3, 16), false);
}

TEST(ChunkKdaBwdWyDqkgFused, CpuMatchesGoldenVarlenLog2) {
  cpu_matches_golden(make_case(1, 64, 1, 2, 6, 4, 32, {0, 57, 2, 5, 0}), true);
}

// Each output element is written by one work item: the bits do not depend on the thread count.
TEST(ChunkKdaBwdWyDqkgFused, ThreadCountDoesNotChangeTheBits) {
  const Case c = make_case(1, 0, 2, 4, 6, 5, 16, {40, 0, 17, 33});
  Outs one = outputs(c), many = outputs(c);
  Context c1, c4;
  c1.num_threads = 1;
  c4.num_threads = 4;
  ASSERT_TRUE(chunk_kda_bwd_wy_dqkg_fused(args_of(c), one.views(), c1).ok());
  ASSERT_TRUE(chunk_kda_bwd_wy_dqkg_fused(args_of(c), many.views(), c4).ok());
  for (auto [a, b] : {std::pair{&one.dq, &many.dq},
                      {&one.dk, &many.dk},
                      {&one.dbeta, &many.dbeta},
                      {&one.dg, &many.dg},
                      {&one.dA, &many.dA}})
    expect_close(*a, *b, 0.0, "fp32 output");
  expect_close(one.dv, many.dv, 0.0, "dv");
}

// One chunk, one head: ℓ = Σ⟨do, o_inter⟩ + ⟨dh, S'⟩ + ⟨dv2, u − w h⟩ with
// Akk = (I + M)^-1, w = Akk (β⊙K⊙e), u = Akk (β⊙V), o_inter_t = scale·(q_t⊙e_t)ᵀ h,
// S' = diag(e_L) h + Σ_t (k_t⊙exp(G_L − G_t)) ⊗ v_new_t. The op's outputs are its derivatives in q,
// k, v, β, G and the strictly lower M (v_new, h, do, dh, dv2 held fixed).
struct Chunk {
  int64_t R, K, V;
  double scale;
  Vec q, k, v, vn, G, beta, M, h, d_o, dh, dv2;

  Vec inverse() const {  // (I + M)^-1 by forward substitution
    Vec X(static_cast<size_t>(R * R), 0.0);
    for (int64_t i = 0; i < R; ++i) {
      X[i * R + i] = 1;
      for (int64_t j = 0; j < i; ++j)
        for (int64_t c = 0; c <= j; ++c) X[i * R + c] -= M[i * R + j] * X[j * R + c];
    }
    return X;
  }

  double loss() const {
    const Vec A = inverse();
    double l = 0;
    for (int64_t t = 0; t < R; ++t)
      for (int64_t c = 0; c < V; ++c) {
        double o = 0;
        for (int64_t d = 0; d < K; ++d)
          o += scale * q[t * K + d] * std::exp(G[t * K + d]) * h[d * V + c];
        l += d_o[t * V + c] * o;
      }
    for (int64_t d = 0; d < K; ++d)
      for (int64_t c = 0; c < V; ++c) {
        double s = std::exp(G[(R - 1) * K + d]) * h[d * V + c];
        for (int64_t t = 0; t < R; ++t)
          s += k[t * K + d] * std::exp(G[(R - 1) * K + d] - G[t * K + d]) * vn[t * V + c];
        l += dh[d * V + c] * s;
      }
    for (int64_t t = 0; t < R; ++t) {
      Vec w(static_cast<size_t>(K), 0.0);
      for (int64_t j = 0; j < R; ++j)
        for (int64_t d = 0; d < K; ++d)
          w[d] += A[t * R + j] * beta[j] * k[j * K + d] * std::exp(G[j * K + d]);
      for (int64_t c = 0; c < V; ++c) {
        double u = 0;
        for (int64_t j = 0; j < R; ++j) u += A[t * R + j] * beta[j] * v[j * V + c];
        for (int64_t d = 0; d < K; ++d) u -= w[d] * h[d * V + c];
        l += dv2[t * V + c] * u;
      }
    }
    return l;
  }
};

void expect_gradients(const Chunk& ch, Outs& o, int64_t R, int64_t K, int64_t V, int64_t BT);

TEST(ChunkKdaBwdWyDqkgFused, EveryOutputIsTheGradientOfTheChunkLoss) {
  const int64_t R = 5, K = 3, V = 2, BT = 16;
  Chunk ch{R, K, V, 0.7};
  auto fill = [](int64_t n, double a, double b) {
    Vec x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[i] = std::sin(a * i + b);
    return x;
  };
  ch.q = fill(R * K, 1.3, 0.2), ch.k = fill(R * K, 0.7, 1.1), ch.v = fill(R * V, 2.1, -0.4);
  ch.vn = fill(R * V, 0.3, 0.5), ch.d_o = fill(R * V, 1.7, 0.9), ch.dv2 = fill(R * V, 0.45, 1.1);
  ch.h = fill(K * V, 0.37, 0.3), ch.dh = fill(K * V, 0.53, -0.2);
  ch.beta = fill(R, 0.9, 0.4);
  for (double& b : ch.beta) b = 0.3 + 0.5 * std::abs(b);
  ch.G.assign(static_cast<size_t>(R * K), 0.0);
  for (int64_t t = 0; t < R; ++t)
    for (int64_t d = 0; d < K; ++d)
      ch.G[t * K + d] =
          (t ? ch.G[(t - 1) * K + d] : 0.0) - 0.1 - 0.2 * std::abs(std::sin(t + 2.0 * d));
  ch.M.assign(static_cast<size_t>(R * R), 0.0);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < i; ++j) ch.M[i * R + j] = 0.3 * std::sin(1.1 * i + 0.7 * j);
  // The op's inputs.
  Case c{1, R, 1, 1, K, V, BT, 1};
  auto t4 = [](const Vec& x, const Shape& s) { return filled(s, [&](int64_t i) { return x[i]; }); };
  c.q = t4(ch.q, {1, R, 1, K}), c.k = t4(ch.k, {1, R, 1, K}), c.v = t4(ch.v, {1, R, 1, V});
  c.vn = t4(ch.vn, {1, R, 1, V}), c.g = t4(ch.G, {1, R, 1, K}), c.beta = t4(ch.beta, {1, R, 1});
  c.d_o = t4(ch.d_o, {1, R, 1, V}), c.dv2 = t4(ch.dv2, {1, R, 1, V});
  c.h = t4(ch.h, {1, 1, 1, K, V}), c.dh = t4(ch.dh, {1, 1, 1, K, V});
  const Vec A = ch.inverse();
  c.A = filled({1, R, 1, BT}, [&](int64_t i) { return i % BT < R ? A[i / BT * R + i % BT] : 0.0; });
  ChunkKdaBwdWyDqkgFusedArgs a = args_of(c);
  a.scale = ch.scale;
  // The CPU path, then the fp64 golden (the plain baseline of fp64 inputs).
  for (int golden = 0; golden < 2; ++golden) {
    SCOPED_TRACE(golden ? "golden" : "cpu");
    Outs o = outputs(c);
    ASSERT_TRUE((golden ? chunk_kda_bwd_wy_dqkg_fused_plain(a, o.views())
                        : chunk_kda_bwd_wy_dqkg_fused(a, o.views()))
                    .ok());
    expect_gradients(ch, o, R, K, V, BT);
  }
}

void expect_gradients(const Chunk& ch, Outs& o, int64_t R, int64_t K, int64_t V, int64_t BT) {
  const double eps = 1e-6;
  auto fd = [&](Vec Chunk::*x, int64_t e) {
    Chunk p = ch, m = ch;
    (p.*x)[e] += eps, (m.*x)[e] -= eps;
    return (p.loss() - m.loss()) / (2 * eps);
  };
  for (int64_t e = 0; e < R * K; ++e) {
    EXPECT_NEAR(f32(o.dq)[e], fd(&Chunk::q, e), 2e-5) << "dq " << e;
    EXPECT_NEAR(f32(o.dk)[e], fd(&Chunk::k, e), 2e-5) << "dk " << e;
    EXPECT_NEAR(f32(o.dg)[e], fd(&Chunk::G, e), 2e-5) << "dg " << e;
  }
  for (int64_t e = 0; e < R * V; ++e)
    EXPECT_NEAR(f64(o.dv)[e], fd(&Chunk::v, e), 1e-7) << "dv " << e;
  for (int64_t e = 0; e < R; ++e)
    EXPECT_NEAR(f32(o.dbeta)[e], fd(&Chunk::beta, e), 2e-5) << "dbeta";
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < BT; ++j) {
      const double want = j < i ? fd(&Chunk::M, i * R + j) : 0.0;
      EXPECT_NEAR(f32(o.dA)[i * BT + j], want, 2e-5) << "dA " << i << "," << j;
    }
}

TEST(ChunkKdaBwdWyDqkgFused, EmptyInputsAreValid) {
  for (const auto& c : {make_case(2, 0, 2, 2, 4, 3, 16), make_case(0, 5, 1, 1, 4, 3, 16),
                        make_case(1, 0, 1, 2, 4, 3, 16, {0, 0})}) {
    Outs o = outputs(c);
    EXPECT_TRUE(chunk_kda_bwd_wy_dqkg_fused(args_of(c), o.views()).ok());
  }
}

TEST(ChunkKdaBwdWyDqkgFused, RefusalsNameTheArgumentAndTheRule) {
  const Case c = make_case(1, 20, 2, 4, 4, 3, 16);
  Outs o = outputs(c);
  {
    ChunkKdaBwdWyDqkgFusedArgs a = args_of(c);
    Tensor g = filled({1, 20, 4}, [](int64_t) { return -0.1; });
    a.g = g.view();
    expect_error(chunk_kda_bwd_wy_dqkg_fused(a, o.views()), "g must be [B, T, HV, K]");
  }
  {
    ChunkKdaBwdWyDqkgFusedArgs a = args_of(c);
    a.chunk_size = 32;
    expect_error(chunk_kda_bwd_wy_dqkg_fused(a, o.views()),
                 "Akk must be [B, T, HV, BT] = [1, 20, 4, 32] (BT = chunk_size)");
  }
  {
    ChunkKdaBwdWyDqkgFusedArgs a = args_of(c);
    Tensor v = filled({1, 20, 3, 3}, [](int64_t) { return 1.0; });
    a.v = v.view();
    expect_error(chunk_kda_bwd_wy_dqkg_fused(a, o.views()),
                 "v's HV=3 must be a multiple of q's H=2");
  }
  {
    ChunkKdaBwdWyDqkgFusedArgs a = args_of(c);
    a.dv2 = c.d_o.view();
    Tensor bad = filled({1, 20, 4, 2}, [](int64_t) { return 1.0; });
    a.dv2 = bad.view();
    expect_error(chunk_kda_bwd_wy_dqkg_fused(a, o.views()),
                 "dv2 must be [B, T, HV, V] = [1, 20, 4, 3]");
  }
  {
    ChunkKdaBwdWyDqkgFusedArgs a = args_of(c);
    a.scale = INFINITY;
    expect_error(chunk_kda_bwd_wy_dqkg_fused(a, o.views()), "scale=inf must be finite");
  }
  {
    Outs bad = outputs(c);
    bad.dq = filled({1, 20, 2, 4}, [](int64_t) { return 0.0; });  // fp64, not fp32
    expect_error(chunk_kda_bwd_wy_dqkg_fused(args_of(c), bad.views()), "dq must be contiguous");
  }
}

}  // namespace
}  // namespace recops
