// training/chunk_kda_bwd_dav/test_chunk_kda_bwd_dav.cpp: the C++ tests of the op beyond `recops
// check`'s cases: both outputs against central differences of the intra output loss
// ℓ = Σ_i do_i · Σ_{j ≤ i} scale·Â_ij v_new_j (dAqk is ∂ℓ/∂Â, dv is ∂ℓ/∂v_new), the CPU path
// against the fp64 golden with varlen and tail chunks, the thread count, empty inputs and the
// refusals with their messages (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/training/chunk_kda_bwd_dav/chunk_kda_bwd_dav.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;
using gdn_test::f64;
using gdn_test::filled;

struct Case {
  int64_t B, T, HV, V, BT;
  Tensor vn, d_o, A, off;
  bool packed = false;
};

Case make_case(int64_t B, int64_t T, int64_t HV, int64_t V, int64_t bt,
               const std::vector<int64_t>& lens = {}) {
  if (!lens.empty()) {
    T = 0;
    for (int64_t n : lens) T += n;
  }
  Case c{B, T, HV, V, bt};
  c.vn = filled({B, T, HV, V}, [](int64_t i) { return std::cos(0.3 * i + 0.5); });
  c.d_o = filled({B, T, HV, V}, [](int64_t i) { return std::sin(1.7 * i + 0.9); });
  c.A = filled({B, T, HV, bt}, [](int64_t i) { return 0.4 * std::sin(0.77 * i + 1.3); });
  if (!lens.empty()) {
    c.packed = true;
    c.off = Tensor::empty({static_cast<int64_t>(lens.size()) + 1}, DType::int64);
    int64_t* o = static_cast<int64_t*>(c.off.data());
    o[0] = 0;
    for (size_t i = 0; i < lens.size(); ++i) o[i + 1] = o[i] + lens[i];
  }
  return c;
}

ChunkKdaBwdDavArgs args_of(const Case& c, double scale) {
  ChunkKdaBwdDavArgs a;
  a.v_new = c.vn.view(), a.d_o = c.d_o.view(), a.Aqk = c.A.view();
  a.scale = scale;
  a.chunk_size = c.BT;
  if (c.packed) a.seq_offsets = c.off.view();
  return a;
}

struct Outs {
  Tensor dA, dv;
};

Outs outputs(const Case& c) {
  Outs o;
  o.dA = filled({c.B, c.T, c.HV, c.BT}, [](int64_t) { return static_cast<float>(NAN); });
  o.dv = filled({c.B, c.T, c.HV, c.V}, [](int64_t) { return static_cast<double>(NAN); });
  return o;
}

// One chunk of R rows, B = 1, HV = 1: central differences of ℓ(Â, v_new) with Aqk = scale·Â.
TEST(ChunkKdaBwdDav, OutputsAreTheLossGradients) {
  const int64_t R = 11, V = 5, BT = 16;
  const double scale = 0.37;
  Case c = make_case(1, R, 1, V, BT);
  auto loss = [&](const std::vector<double>& ahat, const std::vector<double>& vn) {
    double l = 0;
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t d = 0; d < V; ++d)
          l += f64(c.d_o)[i * V + d] * scale * ahat[i * R + j] * vn[j * V + d];
    return l;
  };
  std::vector<double> ahat(R * R, 0.0), vn(f64(c.vn), f64(c.vn) + R * V);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j <= i; ++j) ahat[i * R + j] = f64(c.A)[i * BT + j] / scale;
  Outs o = outputs(c);
  ASSERT_TRUE(chunk_kda_bwd_dav(args_of(c, scale), {o.dA.view(), o.dv.view()}).ok());
  const double eps = 1e-6;
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < BT; ++j) {
      double want = 0;
      if (j <= i) {
        auto up = ahat, dn = ahat;
        up[i * R + j] += eps, dn[i * R + j] -= eps;
        want = (loss(up, vn) - loss(dn, vn)) / (2 * eps);
      }
      EXPECT_NEAR(f32(o.dA)[i * BT + j], want, 1e-5) << i << "," << j;
    }
  for (int64_t t = 0; t < R * V; ++t) {
    auto up = vn, dn = vn;
    up[t] += eps, dn[t] -= eps;
    EXPECT_NEAR(f64(o.dv)[t], (loss(ahat, up) - loss(ahat, dn)) / (2 * eps), 1e-7) << t;
  }
}

void expect_same(Tensor& a, Tensor& b, double tol, const char* what) {
  const int64_t n = a.view().numel();
  ASSERT_EQ(n, b.view().numel());
  for (int64_t i = 0; i < n; ++i) {
    const double x = a.view().dtype == DType::fp64 ? f64(a)[i] : f32(a)[i];
    const double y = b.view().dtype == DType::fp64 ? f64(b)[i] : f32(b)[i];
    ASSERT_NEAR(x, y, tol * (1 + std::abs(y))) << what << "[" << i << "]";
  }
}

// The CPU path against the golden (the plain baseline of fp64 inputs is the fp64 golden).
void cpu_matches_golden(const Case& c) {
  Outs cpu = outputs(c), gold = outputs(c);
  ASSERT_TRUE(chunk_kda_bwd_dav(args_of(c, 0.6), {cpu.dA.view(), cpu.dv.view()}).ok());
  ASSERT_TRUE(chunk_kda_bwd_dav_plain(args_of(c, 0.6), {gold.dA.view(), gold.dv.view()}).ok());
  expect_same(cpu.dA, gold.dA, 1e-6, "dAqk");
  expect_same(cpu.dv, gold.dv, 1e-12, "dv");
}

TEST(ChunkKdaBwdDav, CpuMatchesGoldenTails) {
  cpu_matches_golden(make_case(2, 37, 3, 19, 16));
}

TEST(ChunkKdaBwdDav, CpuMatchesGoldenVarlen) {
  cpu_matches_golden(make_case(1, 0, 2, 7, 32, {0, 57, 2, 5, 0}));
}

TEST(ChunkKdaBwdDav, ThreadCountDoesNotChangeTheBits) {
  const Case c = make_case(1, 0, 2, 9, 16, {40, 0, 17, 33});
  Outs one = outputs(c), many = outputs(c);
  Context c1, c4;
  c1.num_threads = 1;
  c4.num_threads = 4;
  ASSERT_TRUE(chunk_kda_bwd_dav(args_of(c, 1.0), {one.dA.view(), one.dv.view()}, c1).ok());
  ASSERT_TRUE(chunk_kda_bwd_dav(args_of(c, 1.0), {many.dA.view(), many.dv.view()}, c4).ok());
  expect_same(one.dA, many.dA, 0.0, "dAqk");
  expect_same(one.dv, many.dv, 0.0, "dv");
}

TEST(ChunkKdaBwdDav, EmptyInputsAreValid) {
  for (const Case& c :
       {make_case(2, 0, 2, 4, 64), make_case(1, 0, 2, 4, 16, {0, 0}), make_case(1, 5, 0, 4, 64)}) {
    Outs o = outputs(c);
    EXPECT_TRUE(chunk_kda_bwd_dav(args_of(c, 1.0), {o.dA.view(), o.dv.view()}).ok());
  }
}

TEST(ChunkKdaBwdDav, RefusalsNameTheArgument) {
  const Case c = make_case(1, 10, 2, 4, 32);
  Outs o = outputs(c);
  ChunkKdaBwdDavArgs a = args_of(c, 1.0);
  a.chunk_size = 64;
  expect_error(chunk_kda_bwd_dav(a, {o.dA.view(), o.dv.view()}),
               "Aqk must be [B, T, HV, BT] = [1, 10, 2, 64]");
  a.chunk_size = 48;
  expect_error(chunk_kda_bwd_dav(a, {o.dA.view(), o.dv.view()}), "chunk_size=48 must be");
  a = args_of(c, NAN);
  expect_error(chunk_kda_bwd_dav(a, {o.dA.view(), o.dv.view()}), "scale=nan must be finite");
  Tensor bad_do = filled({1, 10, 2, 5}, [](int64_t) { return 0.0; });
  a = args_of(c, 1.0);
  a.d_o = bad_do.view();
  expect_error(chunk_kda_bwd_dav(a, {o.dA.view(), o.dv.view()}), "do must be [B, T, HV, V]");
  Tensor bad_out = filled({1, 10, 2, 32}, [](int64_t) { return 0.0; });  // fp64, want fp32
  expect_error(chunk_kda_bwd_dav(args_of(c, 1.0), {bad_out.view(), o.dv.view()}), "dAqk must be");
}

}  // namespace
}  // namespace recops
