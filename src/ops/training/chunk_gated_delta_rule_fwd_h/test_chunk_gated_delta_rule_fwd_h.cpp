// training/chunk_gated_delta_rule_fwd_h/test_chunk_gated_delta_rule_fwd_h.cpp: the C++ tests of
// the op beyond `recops check`'s cases: a hand-computed chunk, stateful continuity (a prefix run
// and a suffix run from its final state equal the full run), the varlen chunk numbering with GVA,
// the per-channel gate gk (hand-computed, with and without g, and its continuity), the refusals
// and their messages (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/training/chunk_gated_delta_rule_fwd_h/chunk_gated_delta_rule_fwd_h.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::f32;
using gdn_test::filled;

// k [1, T, 1, K], w [1, T, HV, K], u [1, T, HV, V] of small varied values (one key head).
void kwu(int64_t T, int64_t HV, int64_t K, int64_t V, Tensor* k, Tensor* w, Tensor* u) {
  *k = filled({1, T, 1, K}, [](int64_t i) { return static_cast<float>((i * 5) % 13) / 20 - 0.3f; });
  *w = filled({1, T, HV, K},
              [](int64_t i) { return static_cast<float>((i * 7) % 11) / 30 - 0.15f; });
  *u = filled({1, T, HV, V}, [](int64_t i) { return static_cast<float>((i * 3) % 7) / 4 - 0.8f; });
}

// Positions [t0, t1) of an fp32 tensor [1, T, ...] (a view).
TensorView slice(Tensor& t, int64_t t0, int64_t t1) {
  TensorView v = t.view();
  const int64_t row = v.numel() / v.sizes[1];
  Shape s = v.shape();
  s[1] = t1 - t0;
  return TensorView(static_cast<float*>(t.data()) + t0 * row, DType::fp32, v.device, s);
}

// T = 2, H = HV = 1, K = V = 1, chunk 16: one chunk, every output hand-computed.
TEST(ChunkGatedDeltaRuleFwdH, HandComputedChunk) {
  Tensor k = Tensor::empty({1, 2, 1, 1}, DType::fp32), w = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  Tensor u = Tensor::empty({1, 2, 1, 1}, DType::fp32), g = Tensor::empty({1, 2, 1}, DType::fp32);
  Tensor h0 = Tensor::empty({1, 1, 1, 1}, DType::fp32);
  Tensor h = Tensor::empty({1, 1, 1, 1, 1}, DType::fp32),
         vn = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  Tensor ht = Tensor::empty({1, 1, 1, 1}, DType::fp32);
  const float kv[] = {0.5f, -2}, wv[] = {1.5f, 0.25f}, uv[] = {3, -1}, gv[] = {-0.5f, -2};
  for (int i = 0; i < 2; ++i)
    f32(k)[i] = kv[i], f32(w)[i] = wv[i], f32(u)[i] = uv[i], f32(g)[i] = gv[i];
  f32(h0)[0] = 0.75f;
  f32(h)[0] = f32(vn)[0] = f32(vn)[1] = f32(ht)[0] = NAN;
  ChunkGatedDeltaRuleFwdHArgs a;
  a.k = k.view(), a.w = w.view(), a.u = u.view(), a.g = g.view(), a.initial_state = h0.view();
  a.output_final_state = true;
  a.chunk_size = 16;
  const TensorView htv = ht.view();
  ASSERT_TRUE(chunk_gated_delta_rule_fwd_h(a, h.view(), vn.view(), &htv).ok());
  const double v0 = 3 - 1.5 * 0.75, v1 = -1 - 0.25 * 0.75;
  EXPECT_EQ(f32(h)[0], 0.75f);
  EXPECT_NEAR(f32(vn)[0], v0, 1e-6);
  EXPECT_NEAR(f32(vn)[1], v1, 1e-6);
  // S = e^{G_L}·h0 + e^{G_L − G_0}·k0·v0 + k1·v1 with L = 1.
  EXPECT_NEAR(f32(ht)[0], std::exp(-2.0) * 0.75 + std::exp(-1.5) * 0.5 * v0 + -2 * v1, 1e-6);
  a.gate_log2 = true;
  ASSERT_TRUE(chunk_gated_delta_rule_fwd_h(a, h.view(), vn.view(), &htv).ok());
  EXPECT_NEAR(f32(ht)[0], std::exp2(-2.0) * 0.75 + std::exp2(-1.5) * 0.5 * v0 + -2 * v1, 1e-6);
  a.g.reset();
  a.initial_state.reset();
  ASSERT_TRUE(chunk_gated_delta_rule_fwd_h(a, h.view(), vn.view(), &htv).ok());
  EXPECT_EQ(f32(h)[0], 0.0f);
  EXPECT_NEAR(f32(ht)[0], 0.5 * 3 + -2 * -1, 1e-6);
}

// gk (KDA's per-channel gate): T = 2, H = HV = 1, K = 2, V = 1, chunk 16: one chunk, by hand.
// S_i = exp(gk_L[i])·exp(G_L)·h0_i + Σ_t exp(G_L − G_t)·k_t[i]·v_new_t (L = 1; no gk factor on k).
TEST(ChunkGatedDeltaRuleFwdH, HandComputedGk) {
  Tensor k = Tensor::empty({1, 2, 1, 2}, DType::fp32), w = Tensor::empty({1, 2, 1, 2}, DType::fp32);
  Tensor u = Tensor::empty({1, 2, 1, 1}, DType::fp32), g = Tensor::empty({1, 2, 1}, DType::fp32);
  Tensor gk = Tensor::empty({1, 2, 1, 2}, DType::fp32),
         h0 = Tensor::empty({1, 1, 2, 1}, DType::fp32);
  Tensor h = Tensor::empty({1, 1, 1, 2, 1}, DType::fp32),
         vn = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  Tensor ht = Tensor::empty({1, 1, 2, 1}, DType::fp32);
  const float kv[] = {0.5f, -1, -2, 0.25f}, wv[] = {1.5f, 0.5f, 0.25f, -1};
  const float gkv[] = {-0.1f, -0.7f, -0.3f, -1.2f}, uv[] = {3, -1}, gv[] = {-0.5f, -2};
  for (int i = 0; i < 4; ++i) f32(k)[i] = kv[i], f32(w)[i] = wv[i], f32(gk)[i] = gkv[i];
  for (int i = 0; i < 2; ++i) f32(u)[i] = uv[i], f32(g)[i] = gv[i];
  f32(h0)[0] = 0.75f, f32(h0)[1] = -0.5f;
  ChunkGatedDeltaRuleFwdHArgs a;
  a.k = k.view(), a.w = w.view(), a.u = u.view(), a.gk = gk.view(), a.initial_state = h0.view();
  a.output_final_state = true;
  a.chunk_size = 16;
  const TensorView htv = ht.view();
  const double v0 = 3 - (1.5 * 0.75 + 0.5 * -0.5), v1 = -1 - (0.25 * 0.75 + -1 * -0.5);
  for (int mode = 0; mode < 3; ++mode) {  // gk alone; gk with g; gk with g in log2 units
    a.g.reset();
    if (mode > 0) a.g = g.view();
    a.gate_log2 = mode == 2;
    auto e = [&](double x) { return mode == 2 ? std::exp2(x) : std::exp(x); };
    f32(h)[0] = f32(h)[1] = f32(vn)[0] = f32(vn)[1] = f32(ht)[0] = f32(ht)[1] = NAN;
    ASSERT_TRUE(chunk_gated_delta_rule_fwd_h(a, h.view(), vn.view(), &htv).ok()) << mode;
    EXPECT_EQ(f32(h)[0], 0.75f);
    EXPECT_EQ(f32(h)[1], -0.5f);
    EXPECT_NEAR(f32(vn)[0], v0, 1e-6);
    EXPECT_NEAR(f32(vn)[1], v1, 1e-6);
    const double gl = mode > 0 ? -2.0 : 0.0, f0 = mode > 0 ? e(-2.0 + 0.5) : 1.0;
    for (int i = 0; i < 2; ++i) {
      const double want = e(gkv[2 + i]) * e(gl) * f32(h0)[i] + f0 * kv[i] * v0 + kv[2 + i] * v1;
      EXPECT_NEAR(f32(ht)[i], want, 1e-6) << "mode " << mode << " row " << i;
    }
  }
}

// With gk (and g), chunk 16, GVA: the run over [0, 32) and then over [32, 40) from its final state
// gives bit for bit the full run's final state and last chunk.
TEST(ChunkGatedDeltaRuleFwdH, GkPrefixThenSuffixEqualsFullRun) {
  const int64_t T = 40, P = 32, HV = 2, K = 3, V = 2;
  Tensor k, w, u;
  kwu(T, HV, K, V, &k, &w, &u);
  Tensor g = filled({1, T, HV}, [](int64_t i) { return -0.02f * static_cast<float>(i % 16 + 1); });
  Tensor gk = filled({1, T, HV, K}, [](int64_t i) {
    return -0.01f * static_cast<float>(((i / 6) % 16 + 1) * (i % 3 + 1));
  });
  Tensor h0 = filled({1, HV, K, V}, [](int64_t i) { return static_cast<float>(i % 5) / 5 - 0.4f; });
  auto run = [&](int64_t t0, int64_t t1, const TensorView& init, Tensor* h, Tensor* ht) {
    ChunkGatedDeltaRuleFwdHArgs a;
    a.k = slice(k, t0, t1), a.w = slice(w, t0, t1), a.u = slice(u, t0, t1), a.g = slice(g, t0, t1);
    a.gk = slice(gk, t0, t1);
    a.initial_state = init;
    a.output_final_state = true;
    a.chunk_size = 16;
    *h = Tensor::empty({1, (t1 - t0 + 15) / 16, HV, K, V}, DType::fp32);
    Tensor vn = Tensor::empty({1, t1 - t0, HV, V}, DType::fp32);
    *ht = Tensor::empty({1, HV, K, V}, DType::fp32);
    const TensorView htv = ht->view();
    return chunk_gated_delta_rule_fwd_h(a, h->view(), vn.view(), &htv);
  };
  Tensor hf, sf, hp, sp, hs, ss, hn, sn;
  ASSERT_TRUE(run(0, T, h0.view(), &hf, &sf).ok());
  ASSERT_TRUE(run(0, P, h0.view(), &hp, &sp).ok());
  ASSERT_TRUE(run(P, T, sp.view(), &hs, &ss).ok());
  const int64_t chunk = HV * K * V;
  for (int64_t i = 0; i < chunk; ++i) EXPECT_EQ(f32(hf)[2 * chunk + i], f32(hs)[i]) << i;
  for (int64_t i = 0; i < chunk; ++i) EXPECT_EQ(f32(sf)[i], f32(ss)[i]) << i;
  // gk changes the result (the per-channel decay is applied).
  ChunkGatedDeltaRuleFwdHArgs a;
  a.k = k.view(), a.w = w.view(), a.u = u.view(), a.g = g.view(), a.initial_state = h0.view();
  a.output_final_state = true;
  a.chunk_size = 16;
  hn = Tensor::empty({1, 3, HV, K, V}, DType::fp32), sn = Tensor::empty({1, HV, K, V}, DType::fp32);
  Tensor vn = Tensor::empty({1, T, HV, V}, DType::fp32);
  const TensorView snv = sn.view();
  ASSERT_TRUE(chunk_gated_delta_rule_fwd_h(a, hn.view(), vn.view(), &snv).ok());
  EXPECT_NE(f32(sf)[0], f32(sn)[0]);
}

// H = 1, HV = 2 (GVA), K = 3, V = 2, chunk 16, T = 40 (3 chunks): the run over [0, 32) and then
// over [32, 40) from its final state gives bit for bit the full run's h, v_new and final state.
TEST(ChunkGatedDeltaRuleFwdH, PrefixThenSuffixEqualsFullRun) {
  const int64_t T = 40, P = 32, HV = 2, K = 3, V = 2;
  Tensor k, w, u;
  kwu(T, HV, K, V, &k, &w, &u);
  Tensor g = filled({1, T, HV}, [](int64_t i) { return -0.03f * static_cast<float>(i % 16 + 1); });
  Tensor h0 = filled({1, HV, K, V}, [](int64_t i) { return static_cast<float>(i % 5) / 5 - 0.4f; });
  auto run = [&](int64_t t0, int64_t t1, const TensorView& init, Tensor* h, Tensor* vn,
                 Tensor* ht) {
    ChunkGatedDeltaRuleFwdHArgs a;
    a.k = slice(k, t0, t1), a.w = slice(w, t0, t1), a.u = slice(u, t0, t1), a.g = slice(g, t0, t1);
    a.initial_state = init;
    a.output_final_state = true;
    a.chunk_size = 16;
    *h = Tensor::empty({1, (t1 - t0 + 15) / 16, HV, K, V}, DType::fp32);
    *vn = Tensor::empty({1, t1 - t0, HV, V}, DType::fp32);
    *ht = Tensor::empty({1, HV, K, V}, DType::fp32);
    const TensorView htv = ht->view();
    return chunk_gated_delta_rule_fwd_h(a, h->view(), vn->view(), &htv);
  };
  Tensor hf, vf, sf, hp, vp, sp, hs, vs, ss;
  ASSERT_TRUE(run(0, T, h0.view(), &hf, &vf, &sf).ok());
  ASSERT_TRUE(run(0, P, h0.view(), &hp, &vp, &sp).ok());
  ASSERT_TRUE(run(P, T, sp.view(), &hs, &vs, &ss).ok());
  const int64_t chunk = HV * K * V;
  for (int64_t i = 0; i < 2 * chunk; ++i) EXPECT_EQ(f32(hf)[i], f32(hp)[i]) << i;
  for (int64_t i = 0; i < chunk; ++i) EXPECT_EQ(f32(hf)[2 * chunk + i], f32(hs)[i]) << i;
  for (int64_t i = 0; i < P * HV * V; ++i) EXPECT_EQ(f32(vf)[i], f32(vp)[i]) << i;
  for (int64_t i = 0; i < (T - P) * HV * V; ++i) EXPECT_EQ(f32(vf)[P * HV * V + i], f32(vs)[i]);
  for (int64_t i = 0; i < chunk; ++i) EXPECT_EQ(f32(sf)[i], f32(ss)[i]) << i;
  EXPECT_NE(f32(sf)[0], f32(sp)[0]);
}

// Packed sequences [0, 3), [3, 3) (empty), [3, 20) with chunk 16 and num_chunks 5: sequence 0 owns
// h[0, 0], sequence 2 h[0, 1] and h[0, 2]; h[0, 3] and h[0, 4] are zero; the empty sequence's
// final state is its initial state; each sequence starts from its own initial state.
TEST(ChunkGatedDeltaRuleFwdH, VarlenChunkNumbering) {
  const int64_t T = 20, HV = 2, K = 2, V = 2;
  Tensor k, w, u;
  kwu(T, HV, K, V, &k, &w, &u);
  Tensor h0 = filled({3, HV, K, V}, [](int64_t i) { return static_cast<float>(i + 1); });
  Tensor off = Tensor::empty({4}, DType::int64);
  const int64_t ov[] = {0, 3, 3, 20};
  for (int i = 0; i < 4; ++i) static_cast<int64_t*>(off.data())[i] = ov[i];
  Tensor h = filled({1, 5, HV, K, V}, [](int64_t) { return NAN; });
  Tensor vn = Tensor::empty({1, T, HV, V}, DType::fp32),
         ht = Tensor::empty({3, HV, K, V}, DType::fp32);
  ChunkGatedDeltaRuleFwdHArgs a;
  a.k = k.view(), a.w = w.view(), a.u = u.view(), a.initial_state = h0.view();
  a.seq_offsets = off.view();
  a.output_final_state = true;
  a.chunk_size = 16;
  a.num_chunks = 5;
  const TensorView htv = ht.view();
  ASSERT_TRUE(chunk_gated_delta_rule_fwd_h(a, h.view(), vn.view(), &htv).ok());
  const int64_t s = HV * K * V;
  for (int64_t i = 0; i < s; ++i) {
    EXPECT_EQ(f32(h)[i], f32(h0)[i]);              // sequence 0's first chunk: its h0
    EXPECT_EQ(f32(h)[s + i], f32(h0)[2 * s + i]);  // sequence 2's first chunk: its h0
    EXPECT_EQ(f32(ht)[s + i], f32(h0)[s + i]);     // the empty sequence passes its state
    EXPECT_EQ(f32(h)[3 * s + i], 0.0f);
    EXPECT_EQ(f32(h)[4 * s + i], 0.0f);
  }
  // Without num_chunks: NT = ceil(20 / 16) + 3 = 5.
  ChunkGatedDeltaRuleFwdHShapes shp;
  a.num_chunks.reset();
  ASSERT_TRUE(chunk_gated_delta_rule_fwd_h_shape(a, &shp).ok());
  EXPECT_EQ(shp.h, (Shape{1, 5, HV, K, V}));
  EXPECT_EQ(shp.final_state, (Shape{3, HV, K, V}));
}

TEST(ChunkGatedDeltaRuleFwdH, Refusals) {
  Tensor k = Tensor::empty({1, 10, 2, 4}, DType::fp32),
         w = Tensor::empty({1, 10, 3, 4}, DType::fp32);
  Tensor u = Tensor::empty({1, 10, 3, 5}, DType::fp32);
  ChunkGatedDeltaRuleFwdHArgs a;
  a.k = k.view(), a.w = w.view(), a.u = u.view();
  ChunkGatedDeltaRuleFwdHShapes s;
  Status st = chunk_gated_delta_rule_fwd_h_shape(a, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("w's HV=3 must be a multiple of k's H=2"), std::string::npos)
      << st.message();
  Tensor w2 = Tensor::empty({1, 10, 4, 4}, DType::fp32);
  a.w = w2.view();
  st = chunk_gated_delta_rule_fwd_h_shape(a, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("u must be [B, T, HV, V] (w's HV)"), std::string::npos)
      << st.message();
  Tensor u2 = Tensor::empty({1, 10, 4, 5}, DType::fp32),
         h0 = Tensor::empty({2, 4, 4, 5}, DType::fp32);
  a.u = u2.view();
  a.initial_state = h0.view();
  st = chunk_gated_delta_rule_fwd_h_shape(a, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("initial_state must be [N, HV, K, V]"), std::string::npos)
      << st.message();
  a.initial_state.reset();
  a.output_final_state = true;
  Tensor h = Tensor::empty({1, 1, 4, 4, 5}, DType::fp32),
         vn = Tensor::empty({1, 10, 4, 5}, DType::fp32);
  st = chunk_gated_delta_rule_fwd_h(a, h.view(), vn.view(), nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("final_state must be given exactly when output_final_state"),
            std::string::npos)
      << st.message();
  a.output_final_state = false;
  Tensor hb = Tensor::empty({1, 1, 4, 4, 5}, DType::bf16);
  st = chunk_gated_delta_rule_fwd_h(a, hb.view(), vn.view(), nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("h must be contiguous [1, 1, 4, 4, 5]"), std::string::npos)
      << st.message();
  // gk must be [B, T, HV, K] at the value heads (here HV = 4, K = 4), of a float dtype.
  Tensor gk_h = Tensor::empty({1, 10, 2, 4}, DType::fp32),
         gk_k = Tensor::empty({1, 10, 4, 5}, DType::fp32);
  Tensor gk_i = Tensor::empty({1, 10, 4, 4}, DType::int32);
  for (const Tensor* bad : {&gk_h, &gk_k, &gk_i}) {
    a.gk = bad->view();
    st = chunk_gated_delta_rule_fwd_h_shape(a, &s);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(
        st.message().find("chunk_gated_delta_rule_fwd_h: gk must be [B, T, HV, K] (w's HV, k's K)"),
        std::string::npos)
        << st.message();
  }
  Tensor gk_ok = Tensor::empty({1, 10, 4, 4}, DType::bf16);
  a.gk = gk_ok.view();
  EXPECT_TRUE(chunk_gated_delta_rule_fwd_h_shape(a, &s).ok());
}

}  // namespace
}  // namespace recops
