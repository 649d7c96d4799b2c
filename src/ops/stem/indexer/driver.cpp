// src/ops/stem/indexer/driver.cpp: the recops CLI's driver of stem_indexer and
// stem_indexer_metadata (spec: stem_indexer.md). The Stem family's shared helpers are in
// ../common/driver_common.h.
//
// Case fields (the common case-file fields, read this way):
//   shape: [Nq, Nk, Df]
//   lengths: the q lengths (tokens) of the B batches; scale: of the random data
// Features are tags `name` or `name=value` (lists of numbers are ':'-separated):
//   kv=a:b:..          kv lengths (default: the q lengths + delta)
//   delta=N            Lk = Lq + N (history before the chunk)
//   prompt=a:b:..      num_prompt_tokens; prompt_extra=N: Lk + N
//   qmax=N, kmax=N     padded block dims Qmax / Kmax (default the batch maxima)
//   noncausal          causal = false
//   prec=1|2|3         one precision only (default: the indexer runs both, 4 outputs)
//   alpha=X initial=N window=N rate_medium=X bias_medium=N rate_large=X bias_large=N
//   meta               pass the plan from stem_indexer_metadata
//   path=0|1|2|3       force cuda_sm80's path (0 fused, keys in shared memory; 1 fused, keys in
//                      the output rows, as large Kmax runs; 2 our scoring GEMM + selection;
//                      3 cuBLAS scoring GEMM + selection) through Context::tune_config and skip
//                      cuda_sm90 unless --impl names it (the CPU implementations ignore it);
//                      gemm_rows=N (>= 1, e.g. 256 or 512) with path=3: the query blocks per
//                      cuBLAS GEMM
//   scores=zero|vbias_j|vbias_negj|near_tie|inf_nan   special score patterns (default random)
//   kslice             kflat is every other batch of a [2B, ...] tensor (non-contiguous)
//   bs=N, ts=N         stem_block_size / stem_stride
//   bad=WHAT           one deliberate spec §10 violation (see make).
// stem_indexer_metadata reads shape, lengths, kv= / delta=, bs=, ts=, noncausal, window= and
// bad=lens_dtype. A value a tag does not take (scores=zipf, noncausal=1, bad=typo, prec=4) is an
// error naming the tag, the value and the values it takes.
//
// Judging: stem_indexer by spec §11 rules 2-5 (exact sparse_seq_len, -1 padding, valid prefixes,
// equal sets but for boundary ties within the score tolerance of the golden's κ*),
// stem_indexer_metadata exactly against an independent computation of §5 written here.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "ops/stem/common/driver_common.h"
#include "ops/stem/common/stem_rules.h"
#include "recops/sparse_attn.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli::stem {
namespace {

class StemIndexerDriver final : public StemDriver {
 public:
  StemIndexerDriver()
      : StemDriver(
            {"stem_indexer", "stem_indexer_metadata"}, "stem/indexer",
            {"alpha",      "bad",         "bias_large", "bias_medium", "bs",           "delta",
             "gemm_rows",  "initial",     "kmax",       "kslice",      "kv",           "meta",
             "noncausal",  "path",        "prec",       "prompt",      "prompt_extra", "qmax",
             "rate_large", "rate_medium", "scores",     "ts",          "window"}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const Tags tags = tags_of(cs);
    p->op = row.op;
    p->dtype = DType::bf16;
    if (!cs.shape || cs.shape->size() != 3) return case_error(row, "needs `shape: [Nq, Nk, Df]`");
    const int64_t Nq = (*cs.shape)[0], Nk = (*cs.shape)[1], Df = (*cs.shape)[2];
    Lens L;
    RECOPS_RETURN_IF_ERROR(make_lens(row, tags, &L));
    const int64_t B = L.B, Bs = tag_int(tags, "bs", 128), Ts = tag_int(tags, "ts", 16);
    // Named values and flags first, for both ops: an unknown value is an error naming the tag,
    // not a silent default (scores=zipf gave random scores).
    const bool noncausal = tag_flag(tags, "noncausal"), meta = tag_flag(tags, "meta");
    const bool kslice = tag_flag(tags, "kslice");
    const std::string scores =
        tag_choice(tags, "scores", {"zero", "vbias_j", "vbias_negj", "near_tie", "inf_nan"});
    const std::string bad =
        row.op == "stem_indexer_metadata"
            ? tag_choice(tags, "bad", {"lens_dtype"})
            : tag_choice(tags, "bad",
                         {"qflat_dtype", "qflat_rank", "df_mismatch", "vbias_shape", "vbias_dtype",
                          "neg_len", "lens_dtype", "meta_stale", "meta_numel"});
    if ((bad == "meta_stale" || bad == "meta_numel") && !meta)
      return case_error(row, "bad=" + bad + " needs the tag `meta`");
    tag_choice(tags, "prec", {"1", "2", "3"});
    tag_choice(tags, "path", {"0", "1", "2", "3"});
    if (tag_int_at_least(tags, "gemm_rows", 0, 1) > 0 && tag_int(tags, "path", -1) != 3)
      return case_error(row, "gemm_rows= is path 3's and needs path=3");
    p->sizes = {{"B", B}, {"Nq", Nq}, {"Nk", Nk}, {"Df", Df}, {"bs", Bs}, {"ts", Ts}};
    p->sizes.push_back({"causal", noncausal ? 0 : 1});
    p->sizes.push_back({"window", tag_int(tags, "window", 4)});
    if (row.op == "stem_indexer_metadata") {
      p->inputs.push_back(int_input("q_seq_lens", DType::int32, L.q));
      p->inputs.push_back(
          int_input("kv_seq_lens", bad == "lens_dtype" ? DType::int64 : DType::int32, L.kv));
      StemIndexerMetadataArgs a = meta_args(*p, views(p->inputs));
      // The scalar arguments under their names in the op's table (`recops record`'s manifest).
      p->scalars = {{"q_heads", static_cast<double>(a.q_heads)},
                    {"kv_heads", static_cast<double>(a.kv_heads)},
                    {"causal", a.causal ? 1.0 : 0.0},
                    {"stem_block_size", static_cast<double>(a.stem_block_size)},
                    {"dim_qkflat", static_cast<double>(a.dim_qkflat)},
                    {"window_size", static_cast<double>(a.window_size)}};
      Shape s;
      p->shape_error = stem_indexer_metadata_shape(a, &s);
      if (p->shape_error.ok()) p->outputs = {{"metadata", s, DType::int32}};
      return Status::Ok();
    }
    const int64_t Qmax = tag_int(tags, "qmax", max_blocks(L.q, Bs > 0 ? Bs : 1));
    const int64_t Kmax = tag_int(tags, "kmax", max_blocks(L.kv, Bs > 0 ? Bs : 1));
    p->sizes.push_back({"Qmax", Qmax});
    p->sizes.push_back({"Kmax", Kmax});
    uint64_t slot = 1;
    auto seed = [&] { return tensor_seed(cs.seed, slot++); };
    const DType qt = bad == "qflat_dtype" ? DType::fp32 : DType::bf16;
    Shape qs = {B, Nq, Qmax, Df};
    if (bad == "qflat_rank") qs = {TensorView::mul_sat(B, Nq), Qmax, Df};
    p->inputs.push_back(data_input("qflat", qt, qs, seed(), cs.scale));
    // kflat: every other batch of a [2B, ...] buffer when kslice.
    const int64_t kdf = bad == "df_mismatch" ? sat_add(Df, Ts) : Df;
    Input k = data_input("kflat", DType::bf16,
                         {kslice ? TensorView::mul_sat(2, B) : B, Nk, Kmax, kdf}, seed(), cs.scale);
    if (kslice) {
      k.view.sizes[0] = B;
      k.view.strides[0] *= 2;
    }
    p->inputs.push_back(std::move(k));
    Shape vs = {B, Nk, Kmax};
    if (bad == "vbias_shape") vs = {B, Nk, sat_add(Kmax, 1)};
    Input v =
        data_input("vbias", bad == "vbias_dtype" ? DType::bf16 : DType::fp32, vs, seed(), 0.3);
    if (scores == "zero") {
      std::memset(p->inputs[0].buf.data(), 0, static_cast<size_t>(p->inputs[0].buf.nbytes()));
      std::memset(p->inputs[1].buf.data(), 0, static_cast<size_t>(p->inputs[1].buf.nbytes()));
      std::memset(v.buf.data(), 0, static_cast<size_t>(v.buf.nbytes()));
    } else if (scores == "vbias_j" || scores == "vbias_negj" || scores == "near_tie") {
      std::memset(p->inputs[0].buf.data(), 0, static_cast<size_t>(p->inputs[0].buf.nbytes()));
      auto* vp = static_cast<float*>(v.buf.data());
      for (int64_t x = 0; x < v.buf.numel(); ++x) {
        const float j = static_cast<float>(x % vs.back());
        vp[x] = scores == "vbias_j" ? j : scores == "vbias_negj" ? -j : 1.0f + j * 0x1p-12f;
      }
    } else if (scores == "inf_nan") {
      auto* vp = static_cast<float*>(v.buf.data());
      for (int64_t x = 0; x < v.buf.numel(); ++x) {
        const int64_t j = x % vs.back();
        if (j % 7 == 3) vp[x] = INFINITY;
        if (j % 5 == 2) vp[x] = std::nanf("");
        if (j % 11 == 4) vp[x] = -INFINITY;
      }
    }
    p->inputs.push_back(std::move(v));
    std::vector<int64_t> ql = L.q, kl = L.kv;
    if (bad == "neg_len" && B > 0) ql[0] = -1;
    p->inputs.push_back(int_input("q_seq_lens", DType::int32, ql));
    p->inputs.push_back(
        int_input("kv_seq_lens", bad == "lens_dtype" ? DType::int64 : DType::int32, kl));
    if (has(tags, "prompt") && has(tags, "prompt_extra"))
      return case_error(row, "prompt= and prompt_extra= exclude each other");
    if (has(tags, "prompt") || has(tags, "prompt_extra")) {
      std::vector<int64_t> lp = tag_list(tags, "prompt");
      if (has(tags, "prompt_extra"))
        for (int64_t x : L.kv) lp.push_back(sat_add(x, tag_int(tags, "prompt_extra", 0)));
      if (static_cast<int64_t>(lp.size()) != B)
        return case_error(row, "prompt= needs one length per batch");
      p->inputs.push_back(int_input("num_prompt_tokens", DType::int32, lp));
    }
    p->sizes.push_back({"initial", tag_int(tags, "initial", 4)});
    p->sizes.push_back({"bias_medium", tag_int(tags, "bias_medium", 30)});
    p->sizes.push_back({"bias_large", tag_int(tags, "bias_large", 30)});
    put_real(p, "alpha", tag_double(tags, "alpha", 1.0));
    put_real(p, "rate_medium", tag_double(tags, "rate_medium", 0.2));
    put_real(p, "rate_large", tag_double(tags, "rate_large", 0.1));
    const int64_t prec = tag_int(tags, "prec", 0);
    p->sizes.push_back({"prec", prec});
    p->sizes.push_back({"path", tag_int(tags, "path", -1)});
    p->sizes.push_back({"gemm_rows", tag_int(tags, "gemm_rows", 0)});
    if (meta) {
      // The plan as the binding would make it, for these lengths and heads (or stale ones).
      StemIndexerMetadataArgs m;
      std::vector<int64_t> mq = L.q;
      if (bad == "meta_stale" && B > 0) mq[0] = sat_add(mq[0], 1);
      Input mql = int_input("mq", DType::int32, mq);
      Input mkl = int_input("mk", DType::int32, L.kv);
      m.q_seq_lens = mql.view;
      m.kv_seq_lens = mkl.view;
      m.q_heads = Nq;
      m.kv_heads = Nk;
      m.causal = !noncausal;
      m.stem_block_size = Bs;
      m.dim_qkflat = Df;
      m.window_size = tag_int(tags, "window", 4);
      Shape ms;
      Status s = stem_indexer_metadata_shape(m, &ms);
      if (!s.ok()) return case_error(row, "metadata: " + s.message());
      if (bad == "meta_numel") ms[0] += 1;
      Input mi = int_input("metadata", DType::int32, std::vector<int64_t>(ms[0], 0), ms);
      if (bad != "meta_numel") {
        s = stem_indexer_metadata(m, mi.view);
        if (!s.ok()) return case_error(row, "metadata: " + s.message());
      }
      p->inputs.push_back(std::move(mi));
    }
    const StemIndexerArgs a = args(*p, views(p->inputs), prec == 2 ? 2 : prec == 3 ? 3 : 1);
    // The scalar arguments under their names in the op's table (`recops record`'s manifest).
    p->scalars = {{"causal", a.causal ? 1.0 : 0.0},
                  {"stem_block_size", static_cast<double>(a.stem_block_size)},
                  {"stem_stride", static_cast<double>(a.stem_stride)},
                  {"alpha", a.alpha},
                  {"initial_blocks", static_cast<double>(a.initial_blocks)},
                  {"window_size", static_cast<double>(a.window_size)},
                  {"k_block_num_rate_medium", a.k_block_num_rate_medium},
                  {"k_block_num_bias_medium", static_cast<double>(a.k_block_num_bias_medium)},
                  {"k_block_num_rate_large", a.k_block_num_rate_large},
                  {"k_block_num_bias_large", static_cast<double>(a.k_block_num_bias_large)},
                  {"topk_score_precision", static_cast<double>(a.topk_score_precision)}};
    Shape si, sl;
    p->shape_error = stem_indexer_shape(a, &si, &sl);
    if (!p->shape_error.ok()) return Status::Ok();
    p->outputs = {{"sparse_indices", si, DType::int32}, {"sparse_seq_len", sl, DType::int32}};
    if (prec == 0) {
      p->outputs.push_back({"sparse_indices_p2", si, DType::int32});
      p->outputs.push_back({"sparse_seq_len_p2", sl, DType::int32});
    }
    return Status::Ok();
  }

  static StemIndexerMetadataArgs meta_args(const Problem& p, const std::vector<TensorView>& in) {
    StemIndexerMetadataArgs a;
    a.q_seq_lens = *find(p, in, "q_seq_lens");
    a.kv_seq_lens = *find(p, in, "kv_seq_lens");
    a.q_heads = size_of(p, "Nq");
    a.kv_heads = size_of(p, "Nk");
    a.causal = size_of(p, "causal") != 0;
    a.stem_block_size = size_of(p, "bs");
    a.dim_qkflat = size_of(p, "Df");
    a.window_size = size_of(p, "window");
    return a;
  }

  static StemIndexerArgs args(const Problem& p, const std::vector<TensorView>& in, int prec) {
    StemIndexerArgs a;
    a.qflat = *find(p, in, "qflat");
    a.kflat = *find(p, in, "kflat");
    a.vbias = *find(p, in, "vbias");
    a.q_seq_lens = *find(p, in, "q_seq_lens");
    a.kv_seq_lens = *find(p, in, "kv_seq_lens");
    a.num_prompt_tokens = opt(find(p, in, "num_prompt_tokens"));
    a.metadata = opt(find(p, in, "metadata"));
    a.causal = size_of(p, "causal") != 0;
    a.stem_block_size = size_of(p, "bs");
    a.stem_stride = size_of(p, "ts");
    a.alpha = real_of(p, "alpha", 1.0);
    a.initial_blocks = size_of(p, "initial");
    a.window_size = size_of(p, "window");
    a.k_block_num_rate_medium = real_of(p, "rate_medium", 0.2);
    a.k_block_num_bias_medium = size_of(p, "bias_medium");
    a.k_block_num_rate_large = real_of(p, "rate_large", 0.1);
    a.k_block_num_bias_large = size_of(p, "bias_large");
    a.topk_score_precision = prec;
    return a;
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "stem_indexer_metadata")
      return stem_indexer_metadata(meta_args(p, in), out[0], ctx);
    const int64_t prec = size_of(p, "prec");
    // path=N: cuda_sm80's path, forced (the CPU implementations ignore it); cuda_sm90, which
    // has no paths and comes first on Hopper, is skipped unless --impl asks for it.
    Context c = ctx;
    TuneConfig forced;
    if (size_of(p, "path", -1) >= 0 && ctx.tune_config == nullptr) {
      forced.set("path", size_of(p, "path", -1));
      if (size_of(p, "gemm_rows") > 0) forced.set("gemm_rows", size_of(p, "gemm_rows"));
      c.tune_config = &forced;
      if (ctx.impl.empty()) c.skip_impls.push_back("cuda_sm90");
    }
    RECOPS_RETURN_IF_ERROR(
        stem_indexer(args(p, in, prec == 0 ? 1 : static_cast<int>(prec)), out[0], out[1], c));
    if (prec == 0) return stem_indexer(args(p, in, 2), out[2], out[3], c);
    return Status::Ok();
  }

  // stem_indexer_metadata: §5 computed here independently of the library.
  Status golden(const Problem& p, std::vector<Tensor>* out) const override {
    if (p.op != "stem_indexer_metadata") return Driver::golden(p, out);
    *out = alloc_outputs(p, Device::cpu());
    const auto* ql = static_cast<const int32_t*>(p.inputs[0].buf.data());
    const auto* kl = static_cast<const int32_t*>(p.inputs[1].buf.data());
    const int64_t B = size_of(p, "B"), Nq = size_of(p, "Nq"), Nk = size_of(p, "Nk");
    const int64_t Bs = size_of(p, "bs"), S = B * Nk, Tq = std::max<int64_t>(1, 128 / (Nq / Nk));
    const bool causal = size_of(p, "causal") != 0;
    auto* m = static_cast<int32_t*>((*out)[0].data());
    std::fill(m, m + (*out)[0].numel(), 0);
    const int32_t head[] = {0x4D455453,
                            1,
                            static_cast<int32_t>(B),
                            static_cast<int32_t>(Nq),
                            static_cast<int32_t>(Nk),
                            causal,
                            static_cast<int32_t>(Bs),
                            static_cast<int32_t>(size_of(p, "Df")),
                            static_cast<int32_t>(size_of(p, "window")),
                            static_cast<int32_t>(S),
                            static_cast<int32_t>(Tq)};
    std::copy(std::begin(head), std::end(head), m);
    uint32_t h = 2166136261u;
    for (const int32_t* v : {ql, kl})
      for (int64_t b = 0; b < B; ++b) {
        uint32_t x = static_cast<uint32_t>(v[b]);
        for (int k = 0; k < 4; ++k, x >>= 8) h = (h ^ (x & 0xff)) * 16777619u;
      }
    m[12] = static_cast<int32_t>(h);
    std::vector<std::pair<int64_t, int64_t>> cost;  // (-cost, s)
    std::vector<int64_t> qb(static_cast<size_t>(S));
    for (int64_t s = 0; s < S; ++s) {
      const int64_t b = s / Nk, Lq = ql[b], Lk = kl[b];
      const int64_t Qb = (Lq + Bs - 1) / Bs, Kb = (Lk + Bs - 1) / Bs;
      int64_t c = 0;
      for (int64_t i = 0; i < Qb; ++i)
        c += (!causal || Lq == 1) ? Kb : std::clamp<int64_t>(Kb - Qb + i + 1, 0, Kb);
      cost.push_back({-c, s});
      qb[s] = Qb;
    }
    std::sort(cost.begin(), cost.end());
    int64_t off = 0;
    for (int64_t r = 0; r < S; ++r) {
      m[16 + r] = static_cast<int32_t>(cost[r].second);
      off += (qb[cost[r].second] + Tq - 1) / Tq;
      m[16 + S + r + 1] = static_cast<int32_t>(off);
    }
    m[11] = static_cast<int32_t>(off);
    return Status::Ok();
  }

  // Spec §11 rules 2-5 over every row, for each precision's output pair.
  std::optional<Judgement> judge_outputs(const Problem& p, const std::vector<Tensor>& out,
                                         const std::vector<Tensor>& gold) const override {
    if (p.op != "stem_indexer") return std::nullopt;
    Judgement j;
    const int64_t prec0 = size_of(p, "prec");
    for (size_t o = 0; o + 1 < out.size(); o += 2) {
      const int prec = prec0 == 0 ? (o == 0 ? 1 : 2) : static_cast<int>(prec0);
      judge_pair(p, out[o], out[o + 1], gold[o], gold[o + 1], prec, &j);
    }
    return j;
  }

  double bytes(const Problem& p) const override {
    double n = 0;
    for (const auto& x : p.inputs) n += static_cast<double>(x.view.numel() * x.view.itemsize());
    for (const auto& o : p.outputs) {
      double e = 4;
      for (int64_t s : o.shape) e *= static_cast<double>(s);
      n += e;
    }
    return n;
  }
  // 2·Df per visible (row, key block) pair (the causal GEMM of spec §13), per precision run.
  double flops(const Problem& p) const override {
    if (p.op != "stem_indexer" || !p.shape_error.ok()) return -1;
    const auto a = args(p, views(p.inputs), 1);
    const auto* ql = static_cast<const int32_t*>(find(p, views(p.inputs), "q_seq_lens")->data);
    const auto* kl = static_cast<const int32_t*>(find(p, views(p.inputs), "kv_seq_lens")->data);
    ops::stem::StemRules r;
    r.causal = a.causal;
    r.Bs = a.stem_block_size;
    double pairs = 0;
    for (int64_t b = 0; b < size_of(p, "B"); ++b)
      for (int64_t i = 0; i < size_of(p, "Qmax"); ++i)
        pairs += static_cast<double>(ops::stem::visible_blocks(r, ql[b], kl[b], kl[b], i));
    const double runs = size_of(p, "prec") == 0 ? 2 : 1;
    return runs * 2.0 * static_cast<double>(size_of(p, "Df") * size_of(p, "Nq")) * pairs;
  }

 private:
  // κ* of candidate j in row (b, hq, i): the golden's fp32 score (fp64 dot, one rounding), NaN
  // as -inf, bf16-rounded for precision 2.
  static float golden_key(const Problem& p, int64_t b, int64_t hq, int64_t i, int64_t j, int prec) {
    const TensorView& q = p.inputs[0].view;
    const TensorView& k = p.inputs[1].view;
    const TensorView& v = p.inputs[2].view;
    const int64_t Df = q.sizes[3], hk = hq / (q.sizes[1] / k.sizes[1]);
    const auto* qp = static_cast<const uint16_t*>(q.data) + b * q.strides[0] + hq * q.strides[1] +
                     i * q.strides[2];
    const auto* kp = static_cast<const uint16_t*>(k.data) + b * k.strides[0] + hk * k.strides[1] +
                     j * k.strides[2];
    double dot = 0;
    for (int64_t d = 0; d < Df; ++d) dot += to_double(BFloat16{qp[d]}) * to_double(BFloat16{kp[d]});
    const double R = static_cast<double>(size_of(p, "bs") / size_of(p, "ts"));
    const float vb =
        static_cast<const float*>(v.data)[b * v.strides[0] + hk * v.strides[1] + j * v.strides[2]];
    float s = static_cast<float>(dot / (R * R) + vb);
    if (s != s) s = -INFINITY;
    if (prec == 2) s = static_cast<float>(to_double(bf16_from_double(s)));
    return s;
  }

  static void judge_pair(const Problem& p, const Tensor& idx, const Tensor& len, const Tensor& gidx,
                         const Tensor& glen, int prec, Judgement* j) {
    auto fail = [&](const std::string& why) {
      ++j->mismatched;
      if (j->pass) j->detail = "precision " + std::to_string(prec) + ": " + why;
      j->pass = false;
    };
    const int64_t B = idx.shape()[0], Nq = idx.shape()[1], Qmax = idx.shape()[2],
                  Kmax = idx.shape()[3];
    const auto* a = static_cast<const int32_t*>(idx.data());
    const auto* al = static_cast<const int32_t*>(len.data());
    const auto* e = static_cast<const int32_t*>(gidx.data());
    const auto* el = static_cast<const int32_t*>(glen.data());
    const auto a0 = StemIndexerDriver::args(p, views(p.inputs), prec);
    const auto* ql = static_cast<const int32_t*>(a0.q_seq_lens.data);
    const auto* kl = static_cast<const int32_t*>(a0.kv_seq_lens.data);
    const int32_t* pl =
        a0.num_prompt_tokens ? static_cast<const int32_t*>(a0.num_prompt_tokens->data) : kl;
    // V and F (spec §3.2 steps 2-3) written here apart from stem_rules.h, which the
    // implementations compile, so that a mistake there cannot pass as its own yardstick.
    const int64_t Bs = a0.stem_block_size, I = a0.initial_blocks, Wn = a0.window_size;
    auto nblocks = [&](int64_t tokens) { return tokens <= 0 ? 0 : (tokens - 1) / Bs + 1; };
    auto visible = [&](int64_t b, int64_t i) -> int64_t {
      const int64_t Qb = nblocks(ql[b]), Kb = nblocks(kl[b]);
      if (i >= Qb) return 0;
      if (!a0.causal || (ql[b] == 1 && pl[b] >= kl[b])) return Kb;
      return std::clamp<int64_t>(Kb - Qb + i + 1, 0, Kb);
    };
    auto forced = [&](int64_t V, int64_t jj) {
      return jj < std::min(I, V) || jj >= std::max<int64_t>(V - Wn, 0);
    };
    const double rtol = prec == 1 ? 1e-3 : 0x1p-7;
    std::vector<char> in_a(static_cast<size_t>(Kmax)), in_e(static_cast<size_t>(Kmax));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hq = 0; hq < Nq; ++hq)
        for (int64_t i = 0; i < Qmax; ++i) {
          const int64_t row = (b * Nq + hq) * Qmax + i;
          const std::string at = "row (b=" + std::to_string(b) + ", hq=" + std::to_string(hq) +
                                 ", i=" + std::to_string(i) + ")";
          if (al[row] != el[row]) {
            fail(at + ": sparse_seq_len " + std::to_string(al[row]) + ", expected " +
                 std::to_string(el[row]));
            continue;
          }
          const int64_t L = el[row];
          const int32_t* ar = a + row * Kmax;
          const int32_t* er = e + row * Kmax;
          bool ok = true;
          for (int64_t t = L; t < Kmax && ok; ++t)
            if (ar[t] != -1) {
              fail(at + ": slot " + std::to_string(t) + " >= L holds " + std::to_string(ar[t]) +
                   ", expected -1");
              ok = false;
            }
          if (!ok) continue;
          const int64_t V = visible(b, i);
          std::fill(in_a.begin(), in_a.end(), 0);
          std::fill(in_e.begin(), in_e.end(), 0);
          for (int64_t t = 0; t < L && ok; ++t) {
            const int32_t id = ar[t];
            if (id < 0 || id >= V || in_a[id]) {
              fail(at + ": id " + std::to_string(id) +
                   (id >= 0 && id < V ? " duplicated" : " outside [0, V)"));
              ok = false;
              break;
            }
            in_a[id] = 1;
            in_e[er[t]] = 1;
          }
          if (!ok) continue;
          for (int64_t jj = 0; jj < V && ok; ++jj)
            if (forced(V, jj) && !in_a[jj]) {
              fail(at + ": forced id " + std::to_string(jj) + " missing");
              ok = false;
            }
          if (!ok) continue;
          // Boundary ties: every differing id within the tolerance of β (smallest dynamic κ*).
          bool differ = false;
          for (int64_t jj = 0; jj < V; ++jj) differ = differ || in_a[jj] != in_e[jj];
          if (!differ) continue;
          float beta = INFINITY;
          for (int64_t jj = 0; jj < V; ++jj)
            if (in_e[jj] && !forced(V, jj))
              beta = std::min(beta, golden_key(p, b, hq, i, jj, prec));
          for (int64_t jj = 0; jj < V && ok; ++jj) {
            if (in_a[jj] == in_e[jj]) continue;
            const float kj = golden_key(p, b, hq, i, jj, prec);
            const double tol = std::max(2.5e-5, rtol * std::fabs(static_cast<double>(beta)));
            const bool near = kj == beta || std::fabs(static_cast<double>(kj) - beta) <= tol;
            j->max_abs = std::max(j->max_abs, std::fabs(static_cast<double>(kj) - beta));
            if (!near) {
              fail(at + ": id " + std::to_string(jj) + (in_a[jj] ? " selected" : " missing") +
                   " with key " + std::to_string(kj) + ", not a boundary tie with beta " +
                   std::to_string(beta));
              ok = false;
            }
          }
        }
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(StemIndexerDriver);

}  // namespace recops::cli::stem
