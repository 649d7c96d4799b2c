// training/chunk_kda_bwd_intra/test_chunk_kda_bwd_intra.cpp: the C++ tests of the op beyond
// `recops check`'s cases: every output against central differences of ℓ = ⟨dAqk, Â⟩ + ⟨dAkk, M⟩
// (one chunk of 37 rows, so three 16-row sub-blocks, GVA 2, from the KDA forward formulas), the
// CPU path against the fp64 golden with GVA, varlen, tail chunks and gate_log2, the thread count,
// HV = 0 (dq, dk pass through), empty inputs and the refusals with their messages (torch-free;
// built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/training/chunk_kda_bwd_intra/chunk_kda_bwd_intra.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;
using gdn_test::f64;
using gdn_test::filled;

struct Case {
  int64_t B, T, H, HV, K, BT;
  Tensor q, k, g, beta, dAqk, dAkk, dq, dk, dbeta, dg, off;
  bool packed = false;
};

// fp64 inputs; G is a per-channel decreasing cumsum restarting at each chunk start of each
// sequence (`lens`, whose total replaces T, or B rows of T).
Case make_case(int64_t B, int64_t T, int64_t H, int64_t HV, int64_t K, int64_t bt,
               const std::vector<int64_t>& lens = {}) {
  if (!lens.empty()) {
    T = 0;
    for (int64_t n : lens) T += n;
  }
  Case c{B, T, H, HV, K, bt};
  std::vector<int64_t> starts;  // every row's position in its chunk
  if (!lens.empty()) {
    for (int64_t n : lens)
      for (int64_t t = 0; t < n; ++t) starts.push_back(t % bt);
    c.packed = true;
    c.off = Tensor::empty({static_cast<int64_t>(lens.size()) + 1}, DType::int64);
    int64_t* o = static_cast<int64_t*>(c.off.data());
    o[0] = 0;
    for (size_t i = 0; i < lens.size(); ++i) o[i + 1] = o[i] + lens[i];
  } else {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) starts.push_back(t % bt);
  }
  c.q = filled({B, T, H, K}, [](int64_t i) { return 0.4 * std::sin(1.3 * i + 0.2); });
  c.k = filled({B, T, H, K}, [](int64_t i) { return 0.4 * std::cos(0.7 * i + 0.1); });
  c.beta = filled({B, T, HV}, [](int64_t i) { return 0.3 + 0.5 * std::abs(std::sin(0.9 * i)); });
  c.dAqk = filled({B, T, HV, bt}, [](int64_t i) { return std::sin(0.61 * i + 0.4); });
  c.dAkk = filled({B, T, HV, bt}, [](int64_t i) { return std::cos(0.83 * i - 0.3); });
  c.dq = filled({B, T, H, K}, [](int64_t i) { return 0.1 * std::sin(0.5 * i); });
  c.dk = filled({B, T, H, K}, [](int64_t i) { return 0.1 * std::cos(0.5 * i); });
  c.dbeta = filled({B, T, HV}, [](int64_t i) { return 0.2 * std::sin(0.3 * i); });
  c.dg = filled({B, T, HV, K}, [](int64_t i) { return 0.2 * std::cos(0.3 * i); });
  c.g = filled({B, T, HV, K}, [](int64_t) { return 0.0; });
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t hv = 0; hv < HV; ++hv)
      for (int64_t d = 0; d < K; ++d) {
        const double step = -0.05 - 0.3 * std::abs(std::sin(0.61 * (r * HV + hv) * K + 1.7 * d));
        f64(c.g)[(r * HV + hv) * K + d] =
            (starts[r] ? f64(c.g)[((r - 1) * HV + hv) * K + d] : 0.0) + step;
      }
  return c;
}

ChunkKdaBwdIntraArgs args_of(const Case& c, bool log2) {
  ChunkKdaBwdIntraArgs a;
  a.q = c.q.view(), a.k = c.k.view(), a.g = c.g.view(), a.beta = c.beta.view();
  a.dAqk = c.dAqk.view(), a.dAkk = c.dAkk.view();
  a.dq = c.dq.view(), a.dk = c.dk.view(), a.dbeta = c.dbeta.view(), a.dg = c.dg.view();
  a.chunk_size = c.BT;
  a.gate_log2 = log2;
  if (c.packed) a.seq_offsets = c.off.view();
  return a;
}

struct Outs {
  Tensor dq, dk, dbeta, dg;
  ChunkKdaBwdIntraOut views() { return {dq.view(), dk.view(), dbeta.view(), dg.view()}; }
};

Outs outputs(const Case& c) {
  auto nan32 = [](const Shape& s) { return filled(s, [](int64_t) { return float(NAN); }); };
  return {nan32({c.B, c.T, c.H, c.K}), nan32({c.B, c.T, c.H, c.K}), nan32({c.B, c.T, c.HV}),
          nan32({c.B, c.T, c.HV, c.K})};
}

// ℓ of one chunk (B = 1, all T rows) from fp64 inputs, G in natural-log units.
double loss(Case& c, const double* q, const double* k, const double* g, const double* beta) {
  const int64_t R = c.T, H = c.H, HV = c.HV, K = c.K, BT = c.BT;
  double l = 0;
  for (int64_t hv = 0; hv < HV; ++hv) {
    const int64_t h = hv / (HV / H);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        double sa = 0, sm = 0;
        for (int64_t d = 0; d < K; ++d) {
          const double gam = std::exp(g[(i * HV + hv) * K + d] - g[(j * HV + hv) * K + d]);
          sa += q[(i * H + h) * K + d] * k[(j * H + h) * K + d] * gam;
          sm += k[(i * H + h) * K + d] * k[(j * H + h) * K + d] * gam;
        }
        l += f64(c.dAqk)[(i * HV + hv) * BT + j] * sa;
        if (j < i) l += f64(c.dAkk)[(i * HV + hv) * BT + j] * beta[i * HV + hv] * sm;
      }
  }
  return l;
}

TEST(ChunkKdaBwdIntra, OutputsAreTheIncomingPlusTheLossGradients) {
  Case c = make_case(1, 37, 1, 2, 3, 64);
  Outs o = outputs(c);
  ASSERT_TRUE(chunk_kda_bwd_intra(args_of(c, false), o.views()).ok());
  const double eps = 1e-6;
  auto check = [&](Tensor& x, Tensor& in, Tensor& out, const char* what) {
    double* px = f64(x);
    for (int64_t t = 0; t < x.view().numel(); ++t) {
      const double keep = px[t];
      px[t] = keep + eps;
      const double up = loss(c, f64(c.q), f64(c.k), f64(c.g), f64(c.beta));
      px[t] = keep - eps;
      const double dn = loss(c, f64(c.q), f64(c.k), f64(c.g), f64(c.beta));
      px[t] = keep;
      EXPECT_NEAR(f32(out)[t], f64(in)[t] + (up - dn) / (2 * eps), 2e-5) << what << "[" << t << "]";
    }
  };
  check(c.q, c.dq, o.dq, "dq");
  check(c.k, c.dk, o.dk, "dk");
  check(c.beta, c.dbeta, o.dbeta, "dbeta");
  check(c.g, c.dg, o.dg, "dg");
}

void expect_same(Tensor& a, Tensor& b, double tol, const char* what) {
  const int64_t n = a.view().numel();
  ASSERT_EQ(n, b.view().numel());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_NEAR(f32(a)[i], f32(b)[i], tol * (1 + std::abs(f32(b)[i]))) << what << "[" << i << "]";
}

// The CPU path against the golden (the plain baseline of fp64 inputs is the fp64 golden).
void cpu_matches_golden(const Case& c, bool log2) {
  Outs cpu = outputs(c), gold = outputs(c);
  ASSERT_TRUE(chunk_kda_bwd_intra(args_of(c, log2), cpu.views()).ok());
  ASSERT_TRUE(chunk_kda_bwd_intra_plain(args_of(c, log2), gold.views()).ok());
  expect_same(cpu.dq, gold.dq, 1e-6, "dq");
  expect_same(cpu.dk, gold.dk, 1e-6, "dk");
  expect_same(cpu.dbeta, gold.dbeta, 1e-6, "dbeta");
  expect_same(cpu.dg, gold.dg, 1e-6, "dg");
}

TEST(ChunkKdaBwdIntra, CpuMatchesGoldenGvaTails) {
  cpu_matches_golden(make_case(2, 75, 2, 4, 5, 64), false);
}

TEST(ChunkKdaBwdIntra, CpuMatchesGoldenVarlenLog2) {
  cpu_matches_golden(make_case(1, 0, 1, 2, 6, 32, {0, 57, 2, 5, 0}), true);
}

TEST(ChunkKdaBwdIntra, ThreadCountDoesNotChangeTheBits) {
  const Case c = make_case(1, 0, 2, 4, 6, 16, {40, 0, 17, 33});
  Outs one = outputs(c), many = outputs(c);
  Context c1, c4;
  c1.num_threads = 1;
  c4.num_threads = 4;
  ASSERT_TRUE(chunk_kda_bwd_intra(args_of(c, false), one.views(), c1).ok());
  ASSERT_TRUE(chunk_kda_bwd_intra(args_of(c, false), many.views(), c4).ok());
  expect_same(one.dq, many.dq, 0.0, "dq");
  expect_same(one.dk, many.dk, 0.0, "dk");
  expect_same(one.dbeta, many.dbeta, 0.0, "dbeta");
  expect_same(one.dg, many.dg, 0.0, "dg");
}

TEST(ChunkKdaBwdIntra, NoValueHeadsPassDqDkThrough) {
  Case c = make_case(1, 9, 2, 0, 4, 16);
  Outs o = outputs(c);
  ASSERT_TRUE(chunk_kda_bwd_intra(args_of(c, false), o.views()).ok());
  for (int64_t i = 0; i < 9 * 2 * 4; ++i) {
    EXPECT_EQ(f32(o.dq)[i], static_cast<float>(f64(c.dq)[i]));
    EXPECT_EQ(f32(o.dk)[i], static_cast<float>(f64(c.dk)[i]));
  }
}

TEST(ChunkKdaBwdIntra, EmptyInputsAreValid) {
  for (const Case& c : {make_case(2, 0, 2, 2, 4, 64), make_case(1, 0, 1, 2, 4, 16, {0, 0}),
                        make_case(0, 5, 1, 1, 4, 64)}) {
    Outs o = outputs(c);
    EXPECT_TRUE(chunk_kda_bwd_intra(args_of(c, false), o.views()).ok());
  }
}

TEST(ChunkKdaBwdIntra, RefusalsNameTheArgument) {
  const Case c = make_case(1, 10, 2, 4, 3, 32);
  Outs o = outputs(c);
  ChunkKdaBwdIntraArgs a = args_of(c, false);
  a.chunk_size = 64;
  expect_error(chunk_kda_bwd_intra(a, o.views()), "dAqk must be [B, T, HV, BT] = [1, 10, 4, 64]");
  a.chunk_size = 48;
  expect_error(chunk_kda_bwd_intra(a, o.views()), "chunk_size=48 must be 16, 32 or 64");
  Tensor g3 = filled({1, 10, 3, 3}, [](int64_t) { return 0.0; });
  a = args_of(c, false);
  a.g = g3.view();
  expect_error(chunk_kda_bwd_intra(a, o.views()), "g's HV=3 must be a multiple of q's H=2");
  Tensor bad = filled({1, 10, 4, 3}, [](int64_t) { return 0.0; });
  a = args_of(c, false);
  a.dk = bad.view();
  expect_error(chunk_kda_bwd_intra(a, o.views()), "dk must be [B, T, H, K] = [1, 10, 2, 3]");
  Outs wrong = outputs(c);
  wrong.dg = filled({1, 10, 4, 3}, [](int64_t) { return 0.0; });  // fp64, want fp32
  expect_error(chunk_kda_bwd_intra(args_of(c, false), wrong.views()), "dg must be contiguous");
}

}  // namespace
}  // namespace recops
