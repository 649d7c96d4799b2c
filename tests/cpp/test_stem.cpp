// Stem family (stem_indexer.md): the golden and the CPU implementations on hand-checkable
// examples: the §3.3 budget table, the §9 worked example (sink/window forced, ties to the lower
// index, precision 2, non-causal, decode), budget boundaries 55/56/159/160, metadata, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/stem/common/stem_rules.h"
#include "recops/recops.h"

namespace recops {
namespace {

using ops::stem::StemRules;

// K̂ at right-down position p for a prompt of P blocks (Lq = Lk = Lp = P·128, so p = i).
int64_t budget_at(int64_t P, int64_t p, float alpha) {
  StemRules r;
  r.alpha = alpha;
  return ops::stem::budget_k(r, P * 128, P * 128, P * 128, p, int64_t{1} << 40);
}

TEST(StemBudget, SpecTable) {
  // P, K at p = P-1 for alpha 1 / 0.5 / 0.1, midpoint p and K there (alpha 0.5).
  struct Row {
    int64_t P, k1, k05, k01, mid, kmid;
  };
  for (const Row& r :
       {Row{56, 41, 20, 4, 48, 30}, Row{159, 61, 30, 6, 109, 45}, Row{160, 46, 23, 4, 102, 34},
        Row{1024, 132, 66, 13, 577, 99}, Row{2270, 256, 128, 25, 1263, 192}}) {
    EXPECT_EQ(budget_at(r.P, r.P - 1, 1.0f), r.k1) << "P=" << r.P;
    EXPECT_EQ(budget_at(r.P, r.P - 1, 0.5f), r.k05) << "P=" << r.P;
    EXPECT_EQ(budget_at(r.P, r.P - 1, 0.1f), r.k01) << "P=" << r.P;
    EXPECT_EQ(budget_at(r.P, r.mid, 0.5f), r.kmid) << "P=" << r.P;
  }
  StemRules d;
  EXPECT_EQ(ops::stem::budget_ks(d, 12), 12);
  EXPECT_EQ(ops::stem::budget_ks(d, 55), 55);
  EXPECT_EQ(ops::stem::budget_ks(d, 56), 41);
  EXPECT_EQ(ops::stem::budget_ks(d, 159), 61);
  EXPECT_EQ(ops::stem::budget_ks(d, 160), 46);
  EXPECT_EQ(ops::stem::budget_ks(d, 2270), 257);
  EXPECT_EQ(budget_at(55, 54, 0.1f), 55);  // P < 56: Δ = 0, no decay
}

TEST(StemRules, ForcedSetIsAUnion) {
  StemRules r;  // I = Wn = 4
  for (int64_t V = 1; V <= 10; ++V) {
    const auto f = ops::stem::forced_set(r, V);
    int64_t n = 0;
    for (int64_t j = 0; j < V; ++j) n += ops::stem::is_forced(f, j);
    EXPECT_EQ(f.count, n) << "V=" << V;
    EXPECT_EQ(f.count, std::min<int64_t>(V, 8)) << "V=" << V;
  }
}

// A one-element int32 tensor (a sequence length).
Tensor int32_1(int64_t v) {
  Tensor t = Tensor::empty({1}, DType::int32);
  t.view().ptr<int32_t>()[0] = static_cast<int32_t>(v);
  return t;
}

// The indexer's tensors; its attributes at their defaults.
StemIndexerArgs indexer_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& qlen,
                             const Tensor& kvlen) {
  StemIndexerArgs a;
  a.qflat = q;
  a.kflat = k;
  a.vbias = v;
  a.q_seq_lens = qlen;
  a.kv_seq_lens = kvlen;
  return a;
}

// The §9 worked example.
struct Example {
  Tensor qflat = Tensor::empty({1, 2, 5, 16}, DType::bf16);
  Tensor kflat = Tensor::empty({1, 1, 12, 16}, DType::bf16);
  Tensor vbias = Tensor::empty({1, 1, 12}, DType::fp32);
  Tensor qlen, kvlen = int32_1(1500), prompt = int32_1(7680);
  Example(int32_t lq = 400) : qlen(int32_1(lq)) {
    auto* q = qflat.view().ptr<uint16_t>();
    std::fill(q, q + qflat.numel(), uint16_t{0});
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 5; ++i) q[(h * 5 + i) * 16 + h] = bf16_from_double(8).bits;
    const int a[12] = {0, 0, 8, 24, 16, 24, 4, 40, 16, 32, 0, 0};
    const int bb[12] = {0, 0, 16, 8, 16, -8, 16, 0, 8, 24, 0, 0};
    auto* k = kflat.view().ptr<uint16_t>();
    std::fill(k, k + kflat.numel(), uint16_t{0});
    for (int j = 0; j < 12; ++j) {
      k[j * 16] = bf16_from_double(a[j]).bits;
      k[j * 16 + 1] = bf16_from_double(bb[j]).bits;
    }
    auto* v = vbias.view().ptr<float>();
    std::fill(v, v + 12, 0.0f);
    v[5] = 1.0f / 256;
  }
  StemIndexerArgs args(bool b_attrs) const {
    StemIndexerArgs x = indexer_args(qflat, kflat, vbias, qlen, kvlen);
    if (b_attrs) {
      x.num_prompt_tokens = prompt.view();
      x.initial_blocks = 2;
      x.window_size = 2;
      x.alpha = 0.25;
      x.k_block_num_rate_medium = 0.05;
      x.k_block_num_bias_medium = 1;
    }
    return x;
  }
};

// Runs the indexer with one implementation; returns the sorted prefix of every row and L.
struct Rows {
  std::vector<std::vector<int32_t>> ids;
  std::vector<int32_t> len;
};
Rows run(const StemIndexerArgs& a, const std::string& impl) {
  Shape si, sl;
  throw_if_error(stem_indexer_shape(a, &si, &sl));
  Tensor idx = Tensor::empty(si, DType::int32), len = Tensor::empty(sl, DType::int32);
  std::fill(idx.view().ptr<int32_t>(), idx.view().ptr<int32_t>() + idx.numel(), 12345);
  std::fill(len.view().ptr<int32_t>(), len.view().ptr<int32_t>() + len.numel(), 12345);
  Context ctx;
  ctx.impl = impl;
  throw_if_error(stem_indexer(a, idx, len, ctx));
  Rows r;
  const int64_t Kmax = si[3];
  for (int64_t row = 0; row < len.numel(); ++row) {
    const int32_t L = len.view().ptr<int32_t>()[row];
    const int32_t* p = idx.view().ptr<int32_t>() + row * Kmax;
    std::vector<int32_t> v(p, p + L);
    std::sort(v.begin(), v.end());
    for (int64_t t = L; t < Kmax; ++t) EXPECT_EQ(p[t], -1) << impl << " row " << row;
    r.ids.push_back(v);
    r.len.push_back(L);
  }
  return r;
}

const char* kImpls[] = {"reference", "cpu_generic"};

// The Hopper epilogue's short rank key equals rank_key on every kind of fp32 input: signed zeros,
// NaNs of both signs, infinities, subnormals (which bf16 rounding can take to -0), ties to even,
// and random bit patterns.
TEST(StemRules, ShortRankKeyMatchesRankKey) {
  std::vector<uint32_t> bits = {0u,          0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                0xffc00000u, 0x7f800001u, 1u,          0x80000001u, 0x7f7fffffu,
                                0xff7fffffu, 0x80007fffu, 0x80008000u, 0x00008000u, 0x7f7f8000u,
                                0xff7f8000u, 0x3f808000u, 0x3f818000u, 0xbf808000u, 0x007fffffu};
  uint32_t x = 0x12345678u;  // xorshift32
  for (int n = 0; n < 2000000; ++n) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    bits.push_back(x);
  }
  for (uint32_t u : bits) {
    float s;
    std::memcpy(&s, &u, 4);
    ASSERT_EQ(ops::stem::rank_key_short<1>(s), ops::stem::rank_key(s, 1)) << std::hex << u;
    ASSERT_EQ(ops::stem::rank_key_short<2>(s), ops::stem::rank_key(s, 2)) << std::hex << u;
  }
}

TEST(StemIndexer, WorkedExampleA) {
  Example e;
  for (const char* impl : kImpls) {
    Rows r = run(e.args(false), impl);
    for (int h = 0; h < 2; ++h) {
      EXPECT_EQ(std::vector<int32_t>(r.len.begin() + h * 5, r.len.begin() + h * 5 + 5),
                (std::vector<int32_t>{9, 10, 11, 12, 0}))
          << impl;
      EXPECT_EQ(r.ids[h * 5], (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8})) << impl;
    }
  }
}

TEST(StemIndexer, WorkedExampleB) {
  Example e;
  const std::vector<std::vector<int32_t>> head0 = {{0, 1, 3, 4, 5, 7, 8},
                                                   {0, 1, 3, 5, 7, 8, 9},
                                                   {0, 1, 3, 5, 7, 9, 10},
                                                   {0, 1, 5, 7, 9, 10, 11},
                                                   {}};
  const std::vector<std::vector<int32_t>> head1 = {{0, 1, 2, 4, 6, 7, 8},
                                                   {0, 1, 2, 4, 6, 8, 9},
                                                   {0, 1, 2, 4, 6, 9, 10},
                                                   {0, 1, 2, 4, 9, 10, 11},
                                                   {}};
  for (const char* impl : kImpls) {
    for (int prec : {1, 2}) {
      StemIndexerArgs a = e.args(true);
      a.topk_score_precision = prec;
      Rows r = run(a, impl);
      for (int i = 0; i < 5; ++i) {
        auto want0 = head0[i];
        // Precision 2: bf16(3.00390625) = 3 ties with j = 3, and the lower index wins.
        if (prec == 2 && i == 3) want0 = {0, 1, 3, 7, 9, 10, 11};
        EXPECT_EQ(r.ids[i], want0) << impl << " prec " << prec << " head 0 row " << i;
        EXPECT_EQ(r.ids[5 + i], head1[i]) << impl << " prec " << prec << " head 1 row " << i;
        EXPECT_EQ(r.len[i], i < 4 ? 7 : 0);
      }
    }
  }
}

TEST(StemIndexer, WorkedExampleNonCausalAndDecode) {
  for (bool decode : {false, true}) {
    Example e(decode ? 1 : 400);
    StemIndexerArgs a = e.args(true);
    a.causal = decode;  // decode keeps causal on: V = Kb through the decode rule
    for (const char* impl : kImpls) {
      Rows r = run(a, impl);
      const int rows = decode ? 1 : 4;
      for (int i = 0; i < rows; ++i) {
        EXPECT_EQ(r.ids[i], (std::vector<int32_t>{0, 1, 5, 7, 9, 10, 11})) << impl << " " << i;
        EXPECT_EQ(r.ids[5 + i], (std::vector<int32_t>{0, 1, 2, 4, 9, 10, 11})) << impl;
      }
      for (int i = rows; i < 5; ++i) EXPECT_EQ(r.len[i], 0) << impl;
    }
  }
}

TEST(StemIndexer, MetadataGivesIdenticalBits) {
  Example e;
  StemIndexerMetadataArgs m;
  m.q_seq_lens = e.qlen;
  m.kv_seq_lens = e.kvlen;
  m.q_heads = 2;
  m.kv_heads = 1;
  m.dim_qkflat = 16;
  Shape ms;
  throw_if_error(stem_indexer_metadata_shape(m, &ms));
  ASSERT_EQ(ms, Shape{19});
  Tensor meta = Tensor::empty(ms, DType::int32);
  throw_if_error(stem_indexer_metadata(m, meta));
  const int32_t* w = meta.view().ptr<int32_t>();
  EXPECT_EQ(w[0], 0x4D455453);
  EXPECT_EQ(w[10], 64);  // Tq = 128 / G
  EXPECT_EQ(w[11], 1);   // Qb = 4 blocks in one item
  EXPECT_EQ(w[16], 0);
  StemIndexerArgs a = e.args(true);
  Rows without = run(a, "cpu_generic");
  a.metadata = meta.view();
  a.window_size = 2;
  // Metadata recorded window_size = 4: a mismatch is an error naming the field.
  Shape si, sl;
  throw_if_error(stem_indexer_shape(a, &si, &sl));
  Tensor idx = Tensor::empty(si, DType::int32), len = Tensor::empty(sl, DType::int32);
  Status s = stem_indexer(a, idx, len);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("window_size"), std::string::npos) << s.message();
  m.window_size = 2;
  throw_if_error(stem_indexer_metadata(m, meta));
  Rows with = run(a, "cpu_generic");
  EXPECT_EQ(with.ids, without.ids);
  EXPECT_EQ(with.len, without.len);
}

// Every score zero: every candidate ties and the lowest ids win.
TEST(StemIndexer, AllTiesGoToLowerIds) {
  const int64_t Kb = 200;
  Tensor q = Tensor::empty({1, 1, Kb, 16}, DType::bf16),
         k = Tensor::empty({1, 1, Kb, 16}, DType::bf16);
  Tensor v = Tensor::empty({1, 1, Kb}, DType::fp32);
  std::fill(q.view().ptr<uint16_t>(), q.view().ptr<uint16_t>() + q.numel(), uint16_t{0});
  std::fill(k.view().ptr<uint16_t>(), k.view().ptr<uint16_t>() + k.numel(), uint16_t{0});
  std::fill(v.view().ptr<float>(), v.view().ptr<float>() + v.numel(), 0.0f);
  v.view().ptr<float>()[7] = -0.0f;  // -0 equals +0
  const Tensor ql = int32_1(Kb * 128), kl = int32_1(Kb * 128);
  const StemIndexerArgs a = indexer_args(q, k, v, ql, kl);
  for (const char* impl : kImpls) {
    Rows r = run(a, impl);
    const int64_t i = Kb - 1;  // V = 200, Ks = 50, p = 199 -> K = 50
    ASSERT_EQ(r.len[i], 4 + 50 + 4) << impl;
    for (int32_t j = 0; j < 54; ++j) EXPECT_EQ(r.ids[i][j], j) << impl;
    EXPECT_EQ(r.ids[i][54], 196);
  }
}

// Budget boundaries through num_prompt_tokens: L depends only on lengths and attributes.
TEST(StemIndexer, BudgetBoundaries) {
  for (int64_t P : {55, 56, 159, 160}) {
    for (int64_t lp : {128 * P, 128 * (P - 1) + 1}) {
      const int64_t Kb = 50;  // <= P - 1 blocks, so kv_seq_lens <= num_prompt_tokens
      Tensor q = Tensor::empty({1, 1, 1, 16}, DType::bf16);
      Tensor k = Tensor::empty({1, 1, Kb, 16}, DType::bf16);
      Tensor v = Tensor::empty({1, 1, Kb}, DType::fp32);
      for (int64_t x = 0; x < q.numel(); ++x)
        q.view().ptr<uint16_t>()[x] = bf16_from_double(static_cast<double>(x % 5) - 2).bits;
      for (int64_t x = 0; x < k.numel(); ++x)
        k.view().ptr<uint16_t>()[x] = bf16_from_double(static_cast<double>(x % 7) - 3).bits;
      std::fill(v.view().ptr<float>(), v.view().ptr<float>() + Kb, 0.0f);
      // Decode: V = Kb, p = Kb - 1.
      const Tensor ql = int32_1(1), kl = int32_1(Kb * 128), pl = int32_1(lp);
      StemIndexerArgs a = indexer_args(q, k, v, ql, kl);
      a.num_prompt_tokens = pl.view();
      StemRules r;
      const int64_t K = ops::stem::budget_k(r, 1, Kb * 128, lp, 0, Kb - 8);
      const int64_t Ks = ops::stem::budget_ks(r, P);
      EXPECT_EQ(K, std::min<int64_t>(Ks, Kb - 8)) << "P=" << P;  // alpha = 1: no decay
      for (const char* impl : kImpls) EXPECT_EQ(run(a, impl).len[0], 8 + K) << impl << " P=" << P;
    }
  }
}

TEST(StemIndexer, ErrorsNameTheArgument) {
  Example e;
  Shape si, sl;
  StemIndexerArgs a = e.args(false);
  a.alpha = 1.5;
  Status s = stem_indexer_shape(a, &si, &sl);
  EXPECT_NE(s.message().find("alpha"), std::string::npos);
  a = e.args(false);
  a.topk_score_precision = 3;
  s = stem_indexer_shape(a, &si, &sl);
  EXPECT_NE(s.message().find("1 or 2"), std::string::npos);
  a = e.args(false);
  a.vbias.dtype = DType::bf16;
  s = stem_indexer_shape(a, &si, &sl);
  EXPECT_NE(s.message().find("float32"), std::string::npos);
  // E14: q_seq_lens above Qmax·Bs.
  Example big(5 * 128 + 1);
  a = big.args(false);
  throw_if_error(stem_indexer_shape(a, &si, &sl));
  Tensor idx = Tensor::empty(si, DType::int32), len = Tensor::empty(sl, DType::int32);
  s = stem_indexer(a, idx, len);
  EXPECT_NE(s.message().find("q_seq_lens[0]"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace recops
