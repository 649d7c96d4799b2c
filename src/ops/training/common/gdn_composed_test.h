// training/common/gdn_composed_test.h: the C++ tests that the composed Gated DeltaNet op
// (chunk_gated_delta_rule, g [B, T, HV]) and the composed Kimi Delta Attention op (chunk_kda,
// g [B, T, HV, K]) share, beyond `recops check`'s cases (test code only): a hand-computed
// recurrence, stateful continuity (a prefix run and a suffix run from its final state equal the
// full run), varlen equal to per-sequence runs (a zero-length sequence passes its state through),
// use_qk_l2norm_in_kernel equal to normalised inputs, the workspace rule and the refusals with
// their messages; the backward by hand on one token and its refusals. Each function template takes
// a traits struct Op: Args, BwdArgs, BwdOut; kPerChannel (g has a trailing K), kMinChunk (16 or
// 32: the smallest chunk_size), kBwd (the backward's name); shape, workspace_bytes, fwd (the C++
// API functions of the forward), bwd_check, bwd_workspace_bytes, bwd. The op folders' test files
// give the traits and call each function from a TEST.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops::gdn_composed_test {
using gdn_test::expect_error;
using gdn_test::f32;

// s with K appended when the op's gate is per channel.
template <class Op>
Shape gate_shape(Shape s, int64_t K) {
  if constexpr (Op::kPerChannel) s.push_back(K);
  return s;
}

// A [sizes] fp32 tensor of small varied values: a·((i·m) mod p) + c.
inline Tensor filled(const Shape& s, int64_t m, int64_t p, float a, float c) {
  return gdn_test::filled(s, [=](int64_t i) { return a * static_cast<float>((i * m) % p) + c; });
}

// The inputs of a dense problem [B, T, H, K] with HV = 2H, V values (fp32).
template <class Op>
struct Inputs {
  Tensor q, k, v, g, beta, h0;
  Inputs(int64_t B, int64_t T, int64_t H, int64_t K, int64_t V, int64_t N) {
    q = filled({B, T, H, K}, 5, 13, 0.04f, -0.25f);
    k = filled({B, T, H, K}, 7, 11, 0.05f, -0.25f);
    v = filled({B, T, 2 * H, V}, 3, 7, 0.25f, -0.8f);
    g = filled(gate_shape<Op>({B, T, 2 * H}, K), 3, 5, -0.1f, -0.05f);
    beta = filled({B, T, 2 * H}, 2, 9, 0.1f, 0.1f);
    h0 = filled({N, 2 * H, K, V}, 11, 17, 0.05f, -0.4f);
  }
  typename Op::Args args() const {
    typename Op::Args a;
    a.q = q.view(), a.k = k.view(), a.v = v.view(), a.g = g.view(), a.beta = beta.view();
    a.initial_state = h0.view();
    a.output_final_state = true;
    return a;
  }
};

// Runs the op with its workspace into fresh NaN-poisoned outputs.
template <class Op>
Status run(const typename Op::Args& a, Tensor* o, Tensor* ht) {
  Shape os, hs;
  DType dt = DType::fp32;
  RECOPS_RETURN_IF_ERROR(Op::shape(a, &os, &dt, &hs));
  *o = Tensor::empty(os, dt);
  *ht = Tensor::empty(hs, DType::fp32);
  for (int64_t i = 0; i < o->view().numel(); ++i) f32(*o)[i] = NAN;
  for (int64_t i = 0; i < ht->view().numel(); ++i) f32(*ht)[i] = NAN;
  const size_t bytes = Op::workspace_bytes(a);
  std::vector<unsigned char> ws(std::max<size_t>(bytes, 1));
  Context ctx;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = bytes;
  const TensorView htv = ht->view();
  return Op::fwd(a, o->view(), a.output_final_state ? &htv : nullptr, ctx);
}

inline void expect_close(const float* a, const float* b, int64_t n, double tol) {
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], tol) << "at " << i;
}

// T = 2, H = HV = 1, K = V = 1, chunk 16: the recurrence by hand.
template <class Op>
void hand_computed() {
  Tensor q = Tensor::empty({1, 2, 1, 1}, DType::fp32), k = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  Tensor v = Tensor::empty({1, 2, 1, 1}, DType::fp32),
         g = Tensor::empty(gate_shape<Op>({1, 2, 1}, 1), DType::fp32);
  Tensor beta = Tensor::empty({1, 2, 1}, DType::fp32),
         h0 = Tensor::empty({1, 1, 1, 1}, DType::fp32);
  const float qv[] = {0.8f, -1.5f}, kv[] = {0.5f, -2}, vv[] = {3, -1}, gv[] = {-0.5f, -2},
              bv[] = {0.6f, 0.3f};
  for (int i = 0; i < 2; ++i)
    f32(q)[i] = qv[i], f32(k)[i] = kv[i], f32(v)[i] = vv[i], f32(g)[i] = gv[i],
    f32(beta)[i] = bv[i];
  f32(h0)[0] = 0.75f;
  typename Op::Args a;
  a.q = q.view(), a.k = k.view(), a.v = v.view(), a.g = g.view(), a.beta = beta.view();
  a.initial_state = h0.view();
  a.output_final_state = true;
  a.chunk_size = Op::kMinChunk;
  a.scale = 0.5;
  Tensor o, ht;
  ASSERT_TRUE(run<Op>(a, &o, &ht).ok());
  double S = 0.75;
  double want[2];
  for (int t = 0; t < 2; ++t) {
    S *= std::exp(static_cast<double>(gv[t]));
    S += bv[t] * kv[t] * (vv[t] - S * kv[t]);
    want[t] = 0.5 * S * qv[t];
  }
  EXPECT_NEAR(f32(o)[0], want[0], 1e-5);
  EXPECT_NEAR(f32(o)[1], want[1], 1e-5);
  EXPECT_NEAR(f32(ht)[0], S, 1e-5);
}

// A prefix of 70 positions, then the suffix of 61 from its final state, equal the full run.
template <class Op>
void stateful_continuity() {
  const int64_t T = 131, T1 = 70, H = 1, K = 16, V = 8;
  Inputs<Op> in(1, T, H, K, V, 1);
  Tensor o, ht;
  ASSERT_TRUE(run<Op>(in.args(), &o, &ht).ok());
  auto part = [&](const Tensor& x, int64_t from, int64_t len) {
    const Shape s = x.view().shape();
    Shape ps = s;
    ps[1] = len;
    Tensor p = Tensor::empty(ps, DType::fp32);
    const int64_t row = x.view().numel() / s[1];
    std::memcpy(p.data(), static_cast<const float*>(x.data()) + from * row,
                static_cast<size_t>(len * row) * 4);
    return p;
  };
  for (int64_t bt : {Op::kMinChunk, int64_t{64}}) {
    typename Op::Args a = in.args();
    a.chunk_size = bt;
    ASSERT_TRUE(run<Op>(a, &o, &ht).ok());
    Tensor q1 = part(in.q, 0, T1), k1 = part(in.k, 0, T1), v1 = part(in.v, 0, T1),
           g1 = part(in.g, 0, T1), b1 = part(in.beta, 0, T1);
    Tensor q2 = part(in.q, T1, T - T1), k2 = part(in.k, T1, T - T1), v2 = part(in.v, T1, T - T1),
           g2 = part(in.g, T1, T - T1), b2 = part(in.beta, T1, T - T1);
    a.q = q1.view(), a.k = k1.view(), a.v = v1.view(), a.g = g1.view(), a.beta = b1.view();
    Tensor o1, ht1, o2, ht2;
    ASSERT_TRUE(run<Op>(a, &o1, &ht1).ok());
    a.q = q2.view(), a.k = k2.view(), a.v = v2.view(), a.g = g2.view(), a.beta = b2.view();
    a.initial_state = ht1.view();
    ASSERT_TRUE(run<Op>(a, &o2, &ht2).ok());
    const int64_t row = 2 * H * V;
    expect_close(f32(o1), f32(o), T1 * row, 2e-5);
    expect_close(f32(o2), f32(o) + T1 * row, (T - T1) * row, 2e-5);
    expect_close(f32(ht2), f32(ht), ht.view().numel(), 2e-5);
  }
}

// Packed sequences [40, 0, 75] with chunk 32 equal three separate runs; the empty sequence's final
// state is its initial state.
template <class Op>
void varlen_equals_separate_runs() {
  const int64_t H = 2, K = 8, V = 4, HV = 2 * H;
  const int64_t lens[] = {40, 0, 75};
  Inputs<Op> in(1, 115, H, K, V, 3);
  Tensor off = Tensor::empty({4}, DType::int64);
  int64_t* od = static_cast<int64_t*>(off.data());
  od[0] = 0;
  for (int n = 0; n < 3; ++n) od[n + 1] = od[n] + lens[n];
  typename Op::Args a = in.args();
  a.seq_offsets = off.view();
  a.chunk_size = 32;
  Tensor o, ht;
  ASSERT_TRUE(run<Op>(a, &o, &ht).ok());
  const int64_t state = HV * K * V;
  for (int n = 0; n < 3; ++n) {
    const int64_t len = lens[n], at = od[n];
    auto slice = [&](const Tensor& x, int64_t width, const Shape& s) {
      Tensor p = Tensor::empty(s, DType::fp32);
      std::memcpy(p.data(), static_cast<const float*>(x.data()) + at * width,
                  static_cast<size_t>(len * width) * 4);
      return p;
    };
    Tensor q = slice(in.q, H * K, {1, len, H, K}), k = slice(in.k, H * K, {1, len, H, K});
    Tensor v = slice(in.v, HV * V, {1, len, HV, V}),
           g = slice(in.g, Op::kPerChannel ? HV * K : HV, gate_shape<Op>({1, len, HV}, K));
    Tensor b = slice(in.beta, HV, {1, len, HV});
    Tensor h0 = Tensor::empty({1, HV, K, V}, DType::fp32);
    std::memcpy(h0.data(), f32(in.h0) + n * state, static_cast<size_t>(state) * 4);
    typename Op::Args s = in.args();
    s.q = q.view(), s.k = k.view(), s.v = v.view(), s.g = g.view(), s.beta = b.view();
    s.initial_state = h0.view();
    s.chunk_size = 32;
    Tensor os, hts;
    ASSERT_TRUE(run<Op>(s, &os, &hts).ok());
    expect_close(f32(os), f32(o) + at * HV * V, len * HV * V, 1e-5);
    expect_close(f32(hts), f32(ht) + n * state, state, 1e-5);
    if (len == 0) expect_close(f32(ht) + n * state, f32(in.h0) + n * state, state, 0);
  }
}

// use_qk_l2norm_in_kernel equals passing rows normalised by 1/sqrt(Σ x² + 1e-6).
template <class Op>
void l2norm_in_kernel() {
  const int64_t T = 50, H = 1, K = 16, V = 8;
  Inputs<Op> in(1, T, H, K, V, 1);
  typename Op::Args a = in.args();
  a.use_qk_l2norm_in_kernel = true;
  Tensor o, ht;
  ASSERT_TRUE(run<Op>(a, &o, &ht).ok());
  Tensor qn = Tensor::empty({1, T, H, K}, DType::fp32),
         kn = Tensor::empty({1, T, H, K}, DType::fp32);
  for (auto [src, dst] : {std::pair{&in.q, &qn}, std::pair{&in.k, &kn}})
    for (int64_t r = 0; r < T * H; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < K; ++c) ss += double(f32(*src)[r * K + c]) * f32(*src)[r * K + c];
      for (int64_t c = 0; c < K; ++c)
        f32(*dst)[r * K + c] = static_cast<float>(f32(*src)[r * K + c] / std::sqrt(ss + 1e-6));
    }
  a.use_qk_l2norm_in_kernel = false;
  a.q = qn.view(), a.k = kn.view();
  Tensor o2, ht2;
  ASSERT_TRUE(run<Op>(a, &o2, &ht2).ok());
  expect_close(f32(o2), f32(o), o.view().numel(), 1e-6);
  expect_close(f32(ht2), f32(ht), ht.view().numel(), 1e-6);
}

template <class Op>
Status refusal(const typename Op::Args& a) {
  Tensor o, ht;
  return run<Op>(a, &o, &ht);
}

template <class Op>
void refusals() {
  Inputs<Op> in(1, 20, 2, 8, 4, 1);
  typename Op::Args a = in.args();
  // The workspace is required.
  Tensor o = Tensor::empty({1, 20, 4, 4}, DType::fp32),
         ht = Tensor::empty({1, 4, 8, 4}, DType::fp32);
  const TensorView htv = ht.view();
  const Status s = Op::fwd(a, o.view(), &htv);
  expect_error(s, "the workspace must hold");
  // final_state exactly with output_final_state.
  typename Op::Args b = a;
  b.output_final_state = false;
  const Status s2 = Op::fwd(b, o.view(), &htv);
  expect_error(s2, "final_state must be given exactly when output_final_state");
  // k's dtype must be q's.
  Tensor k16 = Tensor::empty({1, 20, 2, 8}, DType::bf16);
  b = a;
  b.k = k16.view();
  expect_error(refusal<Op>(b), "k must have q's dtype fp32");
  // GVA: HV a multiple of H.
  Tensor v3 = Tensor::empty({1, 20, 3, 4}, DType::fp32);
  b = a;
  b.v = v3.view();
  expect_error(refusal<Op>(b), "v's HV=3 must be a multiple of q's H=2");
  // g is [B, T, HV] (GDN) or [B, T, HV, K] (KDA, per channel).
  Tensor g2 = Tensor::empty({1, 20, Op::kPerChannel ? 4 : 2}, DType::fp32);
  b = a;
  b.g = g2.view();
  expect_error(refusal<Op>(b),
               Op::kPerChannel ? "g must be [B, T, HV, K]" : "g must be [B, T, HV]");
  if constexpr (Op::kMinChunk == 32) {  // chunk_size 32 or 64
    b = a;
    b.chunk_size = 16;
    expect_error(refusal<Op>(b), "chunk_size=16 must be 32 or 64");
  }
  // initial_state is [N, HV, K, V].
  Tensor h0 = Tensor::empty({1, 4, 8, 5}, DType::fp32);
  b = a;
  b.initial_state = h0.view();
  expect_error(refusal<Op>(b), "initial_state must be [N, HV, K, V]");
  b = a;
  b.scale = NAN;
  expect_error(refusal<Op>(b), "must be finite");
}

// The backward on one token, K = V = 1, by hand: Sa = e^g h0, r = v − Sa k, S = Sa + β k r,
// o = scale S q; with do = 1 and dht = 0.7: dS = dht + scale q; dq = scale S; dβ = k dS r;
// dr = β dS k; dk = β dS r − Sa dr; dv = dr; dg = (dS − k dr) Sa; dh0 = e^g (dS − k dr).
template <class Op>
void bwd_hand_computed() {
  const double q = 0.8, k = 2, v = 3, g = -0.5, beta = 0.5, h0 = 0.5, dht = 0.7, scale = 1.5;
  auto one = [](const Shape& s, double x) {
    Tensor t = Tensor::empty(s, DType::fp32);
    f32(t)[0] = static_cast<float>(x);
    return t;
  };
  Tensor tq = one({1, 1, 1, 1}, q), tk = one({1, 1, 1, 1}, k), tv = one({1, 1, 1, 1}, v);
  Tensor tg = one(gate_shape<Op>({1, 1, 1}, 1), g), tb = one({1, 1, 1}, beta),
         th = one({1, 1, 1, 1}, h0);
  Tensor tdo = one({1, 1, 1, 1}, 1.0), tdht = one({1, 1, 1, 1}, dht);
  typename Op::BwdArgs a;
  a.grad_o = tdo.view(), a.grad_final_state = tdht.view();
  a.q = tq.view(), a.k = tk.view(), a.v = tv.view(), a.g = tg.view(), a.beta = tb.view();
  a.scale = scale, a.initial_state = th.view(), a.output_final_state = true,
  a.chunk_size = Op::kMinChunk;
  std::vector<Tensor> outs;
  for (const Shape& s : std::vector<Shape>{{1, 1, 1, 1},
                                           {1, 1, 1, 1},
                                           {1, 1, 1, 1},
                                           gate_shape<Op>({1, 1, 1}, 1),
                                           {1, 1, 1},
                                           {1, 1, 1, 1}}) {
    outs.push_back(Tensor::empty(s, DType::fp32));
    f32(outs.back())[0] = NAN;
  }
  const TensorView dh0 = outs[5].view();
  const typename Op::BwdOut o{outs[0].view(), outs[1].view(), outs[2].view(),
                              outs[3].view(), outs[4].view(), &dh0};
  std::vector<unsigned char> ws(Op::bwd_workspace_bytes(a) + 1);
  Context ctx;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = ws.size();
  ASSERT_TRUE(Op::bwd(a, o, ctx).ok());
  const double Sa = std::exp(g) * h0, r = v - Sa * k, S = Sa + beta * k * r;
  const double dS = dht + scale * q, dr = beta * dS * k, dSa = dS - k * dr;
  const double want[] = {scale * S,  beta * dS * r - Sa * dr, dr, dSa * Sa,
                         k * dS * r, std::exp(g) * dSa};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(f32(outs[static_cast<size_t>(i)])[0], want[i], 1e-5) << i;
}

template <class Op>
void bwd_refusals() {
  Inputs<Op> in(1, 20, 2, 8, 4, 1);
  const typename Op::Args f = in.args();
  typename Op::BwdArgs a;
  Tensor d_o = Tensor::empty({1, 20, 4, 4}, DType::fp32),
         dht = Tensor::empty({1, 4, 8, 4}, DType::fp32);
  a.grad_o = d_o.view(), a.grad_final_state = dht.view();
  a.q = f.q, a.k = f.k, a.v = f.v, a.g = f.g, a.beta = f.beta, a.initial_state = f.initial_state;
  a.output_final_state = true;
  bool has = false;
  ASSERT_TRUE(Op::bwd_check(a, &has).ok());
  EXPECT_TRUE(has);
  Tensor bad = Tensor::empty({1, 20, 4, 5}, DType::fp32);
  typename Op::BwdArgs b = a;
  b.grad_o = bad.view();
  Status s = Op::bwd_check(b, &has);
  expect_error(s, (std::string(Op::kBwd) + ": grad_o must be contiguous with v's shape").c_str());
  b = a;
  b.output_final_state = false;
  s = Op::bwd_check(b, &has);
  expect_error(s, "grad_final_state must be None or empty when output_final_state is false");
  b = a;
  b.grad_final_state = bad.view();
  s = Op::bwd_check(b, &has);
  expect_error(s, "grad_final_state must be contiguous [1, 4, 8, 4]");
  b = a;
  b.want_d_initial_state = false;
  ASSERT_TRUE(Op::bwd_check(b, &has).ok());
  EXPECT_FALSE(has);
}

}  // namespace recops::gdn_composed_test
