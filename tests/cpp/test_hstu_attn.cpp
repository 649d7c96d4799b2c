// hstu_attn: the spec's worked mask example on every forward implementation, cpu_generic against
// the reference, and the reference backward against central differences of the forward (fp64).
#include <gtest/gtest.h>

#include <cmath>

#include "core/cpu_features.h"
#include "test_util.h"

namespace recops {
namespace {
using testing::with_impl;

Tensor uniform(const Shape& s, DType dt, uint64_t seed, double scale = 1.0) {
  Tensor t = Tensor::empty(s, dt);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = (core::uniform01(seed, static_cast<uint64_t>(i)) * 2 - 1) * scale;
    switch (dt) {
      case DType::fp64: t.view().ptr<double>()[i] = v; break;
      case DType::fp32: t.view().ptr<float>()[i] = static_cast<float>(v); break;
      case DType::bf16: t.view().ptr<BFloat16>()[i] = bf16_from_double(v); break;
      default: t.view().ptr<Half>()[i] = half_from_double(v); break;
    }
  }
  return t;
}

double at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::fp64: return t.view().ptr<double>()[i];
    case DType::fp32: return t.view().ptr<float>()[i];
    case DType::bf16: return to_double(t.view().ptr<BFloat16>()[i]);
    default: return to_double(t.view().ptr<Half>()[i]);
  }
}

// Every element of `got` within tol · (1 + |gold|) of gold's; else the first that is not.
::testing::AssertionResult near(const Tensor& got, const Tensor& gold, double tol) {
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = at(got, i), w = at(gold, i);
    if (!(std::fabs(g - w) <= tol * (1 + std::fabs(w))))
      return ::testing::AssertionFailure() << "element " << i << ": " << g << ", expected " << w;
  }
  return ::testing::AssertionSuccess();
}

// The same for each tensor of a list (the gradients).
::testing::AssertionResult near(const std::vector<Tensor>& got, const std::vector<Tensor>& gold,
                                double tol) {
  for (size_t t = 0; t < got.size(); ++t)
    if (::testing::AssertionResult r = near(got[t], gold[t], tol); !r)
      return r << " of output " << t;
  return ::testing::AssertionSuccess();
}

Tensor ints(const std::vector<int64_t>& v, DType dt = DType::int64) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, dt);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::int64)
      t.view().ptr<int64_t>()[i] = v[i];
    else
      t.view().ptr<int32_t>()[i] = static_cast<int32_t>(v[i]);
  }
  return t;
}

// q, k, v, both offsets and both longest lengths; the other arguments at their defaults.
HstuAttnArgs attn_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& off_q,
                       const Tensor& off_k, int64_t max_len_q, int64_t max_len_k) {
  HstuAttnArgs a;
  a.q = q;
  a.k = k;
  a.v = v;
  a.seq_offsets_q = off_q.view();
  a.seq_offsets_k = off_k.view();
  a.max_seq_len_q = max_len_q;
  a.max_seq_len_k = max_len_k;
  return a;
}

// A jagged batch: offsets of queries of lengths lq and of keys of lengths lq + delta, the longest.
struct Jagged {
  std::vector<int64_t> oq = {0}, ok = {0};
  int64_t max_q = 0, max_k = 0;
};
Jagged jagged(const std::vector<int64_t>& lq, const std::vector<int64_t>& delta) {
  Jagged j;
  for (size_t b = 0; b < lq.size(); ++b) {
    j.oq.push_back(j.oq.back() + lq[b]);
    j.ok.push_back(j.ok.back() + lq[b] + delta[b]);
    j.max_q = std::max(j.max_q, lq[b]);
    j.max_k = std::max(j.max_k, lq[b] + delta[b]);
  }
  return j;
}

// Spec §3 worked example: L = 9, C = 2, T = 4, G = 2, causal. With q = k = 0, v = I and rab = 10
// on every entry, out[i, c] = silu_scale * SiLU(10) where (i, c) is valid and exactly 0 elsewhere.
TEST(HstuAttn, WorkedExampleMask) {
  const char* expect[9] = {"111110000", "111110000", "111000000", "111100000", "111110000",
                           "111111000", "111111100", "111110010", "111110011"};
  Tensor q = Tensor::empty({9, 1, 4}, DType::fp32), k = Tensor::empty({9, 1, 4}, DType::fp32);
  Tensor v = Tensor::empty({9, 1, 9}, DType::fp32), rab = Tensor::empty({1, 1, 9, 9}, DType::fp32);
  for (int64_t i = 0; i < q.numel(); ++i) q.view().ptr<float>()[i] = k.view().ptr<float>()[i] = 0;
  for (int64_t i = 0; i < 81; ++i) {
    v.view().ptr<float>()[i] = i / 9 == i % 9 ? 1.0f : 0.0f;
    rab.view().ptr<float>()[i] = 10.0f;
  }
  Tensor off = ints({0, 9}), C = ints({2}), T = ints({4});
  HstuAttnArgs a = attn_args(q, k, v, off, off, 9, 9);
  a.num_contexts = C.view();
  a.num_targets = T.view();
  a.target_group_size = 2;
  a.rab = rab.view();
  a.alpha = 1.0;
  a.silu_scale = 1.0;
  const double silu10 = 10.0 / (1.0 + std::exp(-10.0));
  for (const char* impl : {"reference", "cpu_generic"}) {
    Tensor out = Tensor::empty({9, 1, 9}, DType::fp32);
    std::string used;
    ASSERT_TRUE(hstu_attn_fwd(a, out, with_impl(impl, &used)).ok()) << impl;
    EXPECT_EQ(used, impl);
    for (int i = 0; i < 9; ++i)
      for (int c = 0; c < 9; ++c) {
        const double o = out.view().ptr<float>()[i * 9 + c];
        const bool keep = expect[i][c] == '1';
        EXPECT_NEAR(o, keep ? silu10 : 0.0, 1e-5) << impl << " row " << i << " col " << c;
      }
  }
}

struct Problem {
  Tensor q, k, v, rab, off_q, off_k, C, T, scale;
  HstuAttnArgs a;
};

// A jagged GQA problem with contexts, targets, a window, rab (broadcast) and delta-q.
Problem make_problem(DType dt, uint64_t seed, bool window) {
  Problem p;
  const std::vector<int64_t> lq = {7, 0, 12, 3}, delta = {2, 0, 5, 0};
  const Jagged j = jagged(lq, delta);
  std::vector<int64_t> cs, ts;
  for (size_t b = 0; b < lq.size(); ++b) {
    cs.push_back(std::min<int64_t>(2, lq[b]));
    ts.push_back((lq[b] + delta[b]) / 3);
  }
  const int64_t Hq = 4, Hk = 2, d = 8, dv = 6;
  p.q = uniform({j.oq.back(), Hq, d}, dt, seed + 1);
  p.k = uniform({j.ok.back(), Hk, d}, dt, seed + 2);
  p.v = uniform({j.ok.back(), Hk, dv}, dt, seed + 3);
  p.rab = uniform({4, 1, j.max_q, j.max_k}, dt, seed + 4);
  p.off_q = ints(j.oq, DType::int32);
  p.off_k = ints(j.ok, DType::int32);
  p.C = ints(cs);
  p.T = ints(ts);
  p.a = attn_args(p.q, p.k, p.v, p.off_q, p.off_k, j.max_q, j.max_k);
  p.a.num_contexts = p.C.view();
  p.a.num_targets = p.T.view();
  p.a.target_group_size = 2;
  if (window) {
    p.a.window_left = 4;
    p.a.window_right = 1;
  }
  p.a.rab = p.rab.view();
  return p;
}

TEST(HstuAttn, CpuForwardMatchesReference) {
  for (DType dt : {DType::fp32, DType::bf16}) {
    for (bool window : {false, true}) {
      Problem p = make_problem(dt, 10, window);
      Shape os;
      ASSERT_TRUE(hstu_attn_fwd_shape(p.a, &os).ok());
      Tensor gold = Tensor::empty(os, dt), out = Tensor::empty(os, dt);
      ASSERT_TRUE(hstu_attn_fwd(p.a, gold, with_impl("reference")).ok());
      ASSERT_TRUE(hstu_attn_fwd(p.a, out, with_impl("cpu_generic")).ok());
      EXPECT_TRUE(near(out, gold, dt == DType::fp32 ? 1e-6 : 1e-2));
    }
  }
}

// L = Σ w ⊙ out; dL/dx by the reference backward against central differences (fp64).
TEST(HstuAttn, BackwardMatchesFiniteDifferences) {
  for (bool window : {false, true}) {
    Problem p = make_problem(DType::fp64, 20, window);
    Shape os, sq, sk, sv, sr;
    ASSERT_TRUE(hstu_attn_fwd_shape(p.a, &os).ok());
    ASSERT_TRUE(hstu_attn_bwd_shape(p.a, &sq, &sk, &sv, &sr).ok());
    Tensor w = uniform(os, DType::fp64, 99);
    Tensor dq = Tensor::empty(sq, DType::fp64), dk = Tensor::empty(sk, DType::fp64);
    Tensor dv = Tensor::empty(sv, DType::fp64), drab = Tensor::empty(sr, DType::fp64);
    const TensorView drv = drab.view();
    ASSERT_TRUE(hstu_attn_bwd(w, p.a, dq, dk, dv, &drv).ok());
    auto loss = [&]() {
      Tensor out = Tensor::empty(os, DType::fp64);
      EXPECT_TRUE(hstu_attn_fwd(p.a, out, with_impl("reference")).ok());
      double s = 0;
      for (int64_t i = 0; i < out.numel(); ++i) s += at(out, i) * at(w, i);
      return s;
    };
    const double h = 1e-6;
    for (auto [x, g, name] : {std::tuple{&p.q, &dq, "dq"},
                              {&p.k, &dk, "dk"},
                              {&p.v, &dv, "dv"},
                              {&p.rab, &drab, "drab"}}) {
      for (int64_t i = 0; i < x->numel(); i += 7) {
        double& e = x->view().ptr<double>()[i];
        const double keep = e;
        e = keep + h;
        const double lp = loss();
        e = keep - h;
        const double lm = loss();
        e = keep;
        const double fd = (lp - lm) / (2 * h);
        EXPECT_NEAR(at(*g, i), fd, 1e-6 * (1 + std::fabs(fd))) << name << "[" << i << "]";
      }
    }
  }
}

TEST(HstuAttn, BackwardIsDeterministic) {
  Problem p = make_problem(DType::fp32, 30, false);
  Shape os, sq, sk, sv, sr;
  ASSERT_TRUE(hstu_attn_fwd_shape(p.a, &os).ok());
  ASSERT_TRUE(hstu_attn_bwd_shape(p.a, &sq, &sk, &sv, &sr).ok());
  Tensor w = uniform(os, DType::fp32, 7);
  Tensor dq = Tensor::empty(sq, DType::fp32);
  Tensor dk1 = Tensor::empty(sk, DType::fp32), dk2 = Tensor::empty(sk, DType::fp32);
  Tensor dv1 = Tensor::empty(sv, DType::fp32), dv2 = Tensor::empty(sv, DType::fp32);
  ASSERT_TRUE(hstu_attn_bwd(w, p.a, dq, dk1, dv1, nullptr).ok());
  ASSERT_TRUE(hstu_attn_bwd(w, p.a, dq, dk2, dv2, nullptr).ok());
  EXPECT_TRUE(testing::bytes_equal(dk1, dk2));
  EXPECT_TRUE(testing::bytes_equal(dv1, dv2));
}

// A thread request far beyond the machine (torch.set_num_threads(60000), Context::num_threads =
// 100000) is capped (core::max_threads) instead of making libgomp fail to create the threads; the
// results are the same bytes as with one thread (issue 21, memory safety 4).
TEST(HstuAttn, HugeThreadRequestIsCapped) {
  Problem p = make_problem(DType::fp32, 40, true);
  Shape os, sq, sk, sv, sr;
  ASSERT_TRUE(hstu_attn_fwd_shape(p.a, &os).ok());
  ASSERT_TRUE(hstu_attn_bwd_shape(p.a, &sq, &sk, &sv, &sr).ok());
  const Tensor w = uniform(os, DType::fp32, 8);
  for (const char* impl : {"reference", "cpu_generic"}) {
    std::vector<Tensor> got[2];
    for (int run = 0; run < 2; ++run) {
      Context ctx = with_impl(impl);
      ctx.num_threads = run == 0 ? 1 : 100000;
      Tensor out = Tensor::empty(os, DType::fp32), dq = Tensor::empty(sq, DType::fp32);
      Tensor dk = Tensor::empty(sk, DType::fp32), dv = Tensor::empty(sv, DType::fp32);
      Tensor drab = Tensor::empty(sr, DType::fp32);
      ASSERT_TRUE(hstu_attn_fwd(p.a, out, ctx).ok()) << impl;
      ASSERT_TRUE(hstu_attn_bwd(w, p.a, dq, dk, dv, &drab.view(), ctx).ok()) << impl;
      got[run] = {out, dq, dk, dv, drab};
    }
    for (size_t t = 0; t < got[0].size(); ++t)
      EXPECT_TRUE(testing::bytes_equal(got[0][t], got[1][t])) << impl << " output " << t;
  }
}

TEST(HstuAttn, BadInputsNameTheRule) {
  Problem p = make_problem(DType::fp32, 40, false);
  Shape os;
  ASSERT_TRUE(hstu_attn_fwd_shape(p.a, &os).ok());
  Tensor out = Tensor::empty(os, DType::fp32);
  auto expect_error = [&](HstuAttnArgs a, const std::string& text) {
    const Status s = hstu_attn_fwd(a, out);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
  };
  HstuAttnArgs a = p.a;
  a.target_group_size = -1;
  expect_error(a, "target_group_size=-1");
  a = p.a;
  a.mask_type = HstuMaskType::custom;
  expect_error(a, "mask_type custom needs the mask tensor");
  a = p.a;
  a.max_seq_len_q = 5;
  expect_error(a, "max_seq_len_q");
  a = p.a;
  a.seq_offsets_k.reset();
  expect_error(a, "give both seq_offsets_q and seq_offsets_k");
}

}  // namespace
}  // namespace recops

namespace recops {
namespace {

// The tiled CPU backward (both ISA builds) against the reference, fp32 storage.
TEST(HstuAttn, CpuBackwardMatchesReference) {
  for (bool window : {false, true}) {
    Problem p = make_problem(DType::fp32, 50, window);
    Shape os, sq, sk, sv, sr;
    ASSERT_TRUE(hstu_attn_fwd_shape(p.a, &os).ok());
    ASSERT_TRUE(hstu_attn_bwd_shape(p.a, &sq, &sk, &sv, &sr).ok());
    Tensor w = uniform(os, DType::fp32, 5);
    auto run = [&](const char* impl) {
      std::vector<Tensor> g = {Tensor::empty(sq, DType::fp32), Tensor::empty(sk, DType::fp32),
                               Tensor::empty(sv, DType::fp32), Tensor::empty(sr, DType::fp32)};
      for (auto& t : g) testing::poison(t);
      const TensorView drv = g[3].view();
      std::string used;
      EXPECT_TRUE(hstu_attn_bwd(w, p.a, g[0], g[1], g[2], &drv, with_impl(impl, &used)).ok());
      EXPECT_EQ(used, impl);
      return g;
    };
    const auto gold = run("reference");
    for (const char* impl : {"cpu_avx2", "cpu_generic"}) {
      if (!core::cpu_features().avx2 && std::string(impl) == "cpu_avx2") continue;
      EXPECT_TRUE(near(run(impl), gold, 1e-5)) << impl;
    }
  }
}

}  // namespace
}  // namespace recops

namespace recops {
namespace {

// Several query and key tiles, odd head dims (bf16 pairs padded), dv != d, GQA, delta-q,
// contexts/targets/window, a broadcast rab, then a per-head custom mask: every CPU forward and
// backward against the reference. Under the sanitizers this also checks the tile scratch bounds.
TEST(HstuAttn, CpuMatchesReferenceOnAwkwardTiles) {
  const std::vector<int64_t> lq = {199, 0, 130, 1, 64}, delta = {3, 0, 0, 2, 65};
  const Jagged j = jagged(lq, delta);
  const int64_t sq = j.max_q, sk = j.max_k;
  std::vector<int64_t> cs, ts;
  for (size_t b = 0; b < lq.size(); ++b) {
    cs.push_back(lq[b] / 7);
    ts.push_back((lq[b] + delta[b]) / 4);
  }
  for (bool custom : {false, true}) {
    for (DType dt : {DType::fp32, DType::bf16}) {
      const int64_t Hq = 4, Hk = 2, d = 37, dv = 40;
      Tensor q = uniform({j.oq.back(), Hq, d}, dt, 61), k = uniform({j.ok.back(), Hk, d}, dt, 62);
      Tensor v = uniform({j.ok.back(), Hk, dv}, dt, 63), rab = uniform({5, 1, sq, sk}, dt, 64);
      Tensor offq = ints(j.oq), offk = ints(j.ok, DType::int32), C = ints(cs), T = ints(ts);
      Tensor mask = Tensor::empty({5, Hq, sq, sk}, DType::boolean);
      for (int64_t i = 0; i < mask.numel(); ++i)
        mask.view().ptr<uint8_t>()[i] = core::uniform01(65, static_cast<uint64_t>(i)) < 0.6;
      HstuAttnArgs a = attn_args(q, k, v, offq, offk, sq, sk);
      a.rab = rab.view();
      if (custom) {
        a.mask_type = HstuMaskType::custom;
        a.mask = mask.view();
      } else {
        a.num_contexts = C.view();
        a.num_targets = T.view();
        a.target_group_size = 3;
        a.window_left = 50;
        a.window_right = 7;
      }
      Shape os, s1, s2, s3, s4;
      ASSERT_TRUE(hstu_attn_fwd_shape(a, &os).ok());
      ASSERT_TRUE(hstu_attn_bwd_shape(a, &s1, &s2, &s3, &s4).ok());
      Tensor w = uniform(os, dt, 66);
      auto fwd = [&](const char* impl) {
        Tensor o = Tensor::empty(os, dt);
        testing::poison(o);
        EXPECT_TRUE(hstu_attn_fwd(a, o, with_impl(impl)).ok()) << impl;
        return o;
      };
      auto bwd = [&](const char* impl) {
        std::vector<Tensor> g = {Tensor::empty(s1, dt), Tensor::empty(s2, dt),
                                 Tensor::empty(s3, dt), Tensor::empty(s4, dt)};
        for (auto& t : g) testing::poison(t);
        const TensorView drv = g[3].view();
        EXPECT_TRUE(hstu_attn_bwd(w, a, g[0], g[1], g[2], &drv, with_impl(impl)).ok()) << impl;
        return g;
      };
      // fp32: the CPU sums in fp32 against double; bf16: outputs one bf16 rounding apart, P
      // rounded to bf16 in cpu_avx512_bf16.
      const double tol = dt == DType::fp32 ? 2e-5 : 3e-2;
      const Tensor gold = fwd("reference");
      const auto gold_g = bwd("reference");
      const auto& f = core::cpu_features();
      std::vector<const char*> fwd_impls = {"cpu_generic"}, bwd_impls = {"cpu_generic"};
      if (f.avx2 && f.fma) fwd_impls.push_back("cpu_avx2"), bwd_impls.push_back("cpu_avx2");
      if (f.avx512f) bwd_impls.push_back("cpu_avx512");
      if (f.avx512f && f.avx512bw && f.avx512bf16 && dt == DType::bf16)
        fwd_impls.push_back("cpu_avx512_bf16");
      for (const char* impl : fwd_impls) ASSERT_TRUE(near(fwd(impl), gold, tol)) << impl << " out";
      for (const char* impl : bwd_impls)
        ASSERT_TRUE(near(bwd(impl), gold_g, tol)) << impl << " grad";
    }
  }
}

}  // namespace
}  // namespace recops

namespace recops {
namespace {

// Paged KV (forward) and the func interval mask (forward and backward): every CPU path against
// the reference. The CLI cases cover them too; these run in ctest and under the sanitizers.
TEST(HstuAttn, CpuMatchesReferencePagedAndFunc) {
  const auto& f = core::cpu_features();
  std::vector<const char*> fwd_impls = {"cpu_generic"};
  if (f.avx2 && f.fma) fwd_impls.push_back("cpu_avx2");
  for (DType dt : {DType::fp32, DType::bf16}) {
    if (dt == DType::bf16 && f.avx512f && f.avx512bw && f.avx512bf16)
      fwd_impls.push_back("cpu_avx512_bf16");
    // Paged: sequence b has cached[b] tokens in pages of 16, then lq[b] new tokens.
    const std::vector<int64_t> lq = {5, 0, 70}, cached = {0, 33, 47};
    const int64_t ps = 16, Hq = 2, Hk = 1, d = 24;
    std::vector<int64_t> oq = {0}, page_off = {0}, last, ids;
    int64_t sk = 0;
    for (size_t b = 0; b < lq.size(); ++b) {
      oq.push_back(oq.back() + lq[b]);
      const int64_t np = (cached[b] + ps - 1) / ps;
      page_off.push_back(page_off.back() + np);
      last.push_back(np ? cached[b] - (np - 1) * ps : 0);
      sk = std::max(sk, cached[b] + lq[b]);
    }
    const int64_t num_pages = page_off.back() + 2;
    for (int64_t j = 0; j < page_off.back(); ++j) ids.push_back((j * 3 + 1) % num_pages);
    Tensor q = uniform({oq.back(), Hq, d}, dt, 71), k = uniform({oq.back(), Hk, d}, dt, 72);
    Tensor v = uniform({oq.back(), Hk, d}, dt, 73);
    Tensor cache = uniform({num_pages, 2, ps, Hk, d}, dt, 74);
    Tensor off = ints(oq), po = ints(page_off), pid = ints(ids, DType::int32), lpl = ints(last);
    Tensor T = ints({2, 1, 9});
    HstuAttnArgs a = attn_args(q, k, v, off, off, 70, sk);
    a.num_targets = T.view();
    a.kv_cache = cache.view();
    a.page_offsets = po.view();
    a.page_ids = pid.view();
    a.last_page_len = lpl.view();
    Shape os;
    ASSERT_TRUE(hstu_attn_fwd_shape(a, &os).ok());
    Tensor gold = Tensor::empty(os, dt);
    ASSERT_TRUE(hstu_attn_fwd(a, gold, with_impl("reference")).ok());
    const double tol = dt == DType::fp32 ? 2e-5 : 3e-2;
    for (const char* impl : fwd_impls) {
      Tensor o = Tensor::empty(os, dt);
      testing::poison(o);
      ASSERT_TRUE(hstu_attn_fwd(a, o, with_impl(impl)).ok()) << impl;
      ASSERT_TRUE(near(o, gold, tol)) << impl;
    }
    // func, per head, nfunc = 5 (no cache).
    HstuAttnArgs fa = a;
    fa.kv_cache.reset();
    fa.page_offsets.reset();
    fa.page_ids.reset();
    fa.last_page_len.reset();
    fa.num_targets.reset();
    fa.max_seq_len_k = 70;
    const int64_t nf = 5, tq = oq.back();
    Tensor func = Tensor::empty({Hq, nf, tq}, DType::int32);
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t t = 0; t < tq; ++t) {
        int32_t prev = 0;
        for (int64_t j = 0; j < nf; ++j) {
          prev += static_cast<int32_t>(
              core::uniform_int(75, static_cast<uint64_t>((h * tq + t) * nf + j), 0, 20));
          func.view().ptr<int32_t>()[(h * nf + j) * tq + t] = prev;
        }
      }
    fa.func = func.view();
    Tensor fgold = Tensor::empty(os, dt);
    ASSERT_TRUE(hstu_attn_fwd(fa, fgold, with_impl("reference")).ok());
    Shape s1, s2, s3, s4;
    ASSERT_TRUE(hstu_attn_bwd_shape(fa, &s1, &s2, &s3, &s4).ok());
    Tensor w = uniform(os, dt, 76);
    auto bwd = [&](const char* impl) {
      std::vector<Tensor> g = {Tensor::empty(s1, dt), Tensor::empty(s2, dt), Tensor::empty(s3, dt)};
      EXPECT_TRUE(hstu_attn_bwd(w, fa, g[0], g[1], g[2], nullptr, with_impl(impl)).ok()) << impl;
      return g;
    };
    const auto ggold = bwd("reference");
    for (const char* impl : fwd_impls) {
      Tensor o = Tensor::empty(os, dt);
      ASSERT_TRUE(hstu_attn_fwd(fa, o, with_impl(impl)).ok()) << impl;
      ASSERT_TRUE(near(o, fgold, tol)) << impl;
      if (std::string(impl) == "cpu_avx512_bf16") continue;  // forward only
      ASSERT_TRUE(near(bwd(impl), ggold, tol)) << impl << " grad";
    }
  }
}

}  // namespace
}  // namespace recops
