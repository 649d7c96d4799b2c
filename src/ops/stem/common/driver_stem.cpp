// tools/recops/drivers/stem.cpp: the Stem family (stem_indexer.md): stem_prepare, stem_indexer,
// stem_indexer_metadata and block_sparse_attention.
//
// Case fields (the common case-file fields, read this way):
//   shape: [Nq, Nk, Df] (indexer) or [Nq, Nk, D] (prepare, attention)
//   lengths: the q lengths (tokens) of the B batches; scale: of the random data
// Features are tags `name` or `name=value` (lists of numbers are ':'-separated):
//   kv=a:b:..          kv lengths (default: the q lengths + delta)
//   delta=N            Lk = Lq + N (history before the chunk)
//   prompt=a:b:..      num_prompt_tokens (indexer); prompt_extra=N: Lk + N
//   qmax=N, kmax=N     padded block dims Qmax / Kmax (default the batch maxima)
//   noncausal          causal = false
//   prec=1|2|3         one precision only (default: the indexer runs both, 4 outputs)
//   alpha=X initial=N window=N rate_medium=X bias_medium=N rate_large=X bias_large=N
//   meta               pass the plan from stem_indexer_metadata
//   path=0|1|2|3       indexer: force cuda_sm80's path (0 fused, keys in shared memory; 1 fused,
//                      keys in the output rows, as large Kmax runs; 2 our scoring GEMM +
//                      selection; 3 cuBLAS scoring GEMM + selection) through Context::tune_config
//                      and skip cuda_sm90 unless --impl names it (the CPU implementations
//                      ignore it); gemm_rows=256|512 with path=3: the query blocks per cuBLAS GEMM
//   scores=zero|vbias_j|vbias_negj|near_tie|inf_nan   special score patterns (default random)
//   kslice             kflat is every other batch of a [2B, ...] tensor (non-contiguous)
//   bs=N, ts=N         stem_block_size / stem_stride (sparse_block_size for attention)
//   paged=PS           paged K/V with page size PS (prepare, attention)
//   qscale=tensor|token kscale=tensor|token vscale=tensor|head lambda=X   (prepare)
//   sel=all|rand|empty (attention: full visible selection permuted, random subsets, nothing)
//   softmax_scale=X    (attention)
//   fa_rows=16|32      attention: cuda_sm80_fa's query rows per warp at D = 128 (tune_config)
//   bad=WHAT           one deliberate spec §10 violation (see make_*).
//
// Judging: stem_indexer by spec §11 rules 2-5 (exact sparse_seq_len, -1 padding, valid prefixes,
// equal sets but for boundary ties within the score tolerance of the golden's κ*), stem_prepare
// by rule 7 (1 bf16 ulp for qflat/kflat, exact zero padding, vbias within 1e-5 + 1e-4·|g|),
// block_sparse_attention by the file's `double` standard against the plain baseline,
// stem_indexer_metadata exactly against an independent computation of §5 written here.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "ops/stem/common/stem_rules.h"
#include "recops/sparse_attn.h"
#include "tools/recops/inputs.h"
#include "tools/recops/gen.h"

namespace recops::cli {
namespace {

using Tags = std::map<std::string, std::string>;

Tags tags_of(const CaseSpec& cs) {
  Tags m;
  for (const auto& t : cs.tags) {
    const auto eq = t.find('=');
    if (eq == std::string::npos)
      m[t] = "";
    else
      m[t.substr(0, eq)] = t.substr(eq + 1);
  }
  return m;
}
bool has(const Tags& t, const std::string& k) {
  return t.count(k) > 0;
}
int64_t tag_int(const Tags& t, const std::string& k, int64_t d) {
  auto it = t.find(k);
  return it == t.end() || it->second.empty() ? d : std::stoll(it->second);
}
double tag_double(const Tags& t, const std::string& k, double d) {
  auto it = t.find(k);
  if (it == t.end() || it->second.empty()) return d;
  if (it->second == "nan") return std::nan("");
  if (it->second == "inf") return INFINITY;
  return std::stod(it->second);
}
std::string tag_str(const Tags& t, const std::string& k) {
  auto it = t.find(k);
  return it == t.end() ? "" : it->second;
}
std::vector<int64_t> tag_list(const Tags& t, const std::string& k) {
  std::vector<int64_t> v;
  std::stringstream ss(tag_str(t, k));
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) v.push_back(std::stoll(item));
  return v;
}
int64_t size_of(const Problem& p, const std::string& key, int64_t dflt = 0) {
  for (const auto& [k, v] : p.sizes)
    if (k == key) return v;
  return dflt;
}
double real_of(const Problem& p, const std::string& key, double dflt) {
  for (const auto& [k, v] : p.sizes)
    if (k == key) return std::bit_cast<double>(v);
  return dflt;
}
void put_real(Problem* p, const std::string& key, double v) {
  p->sizes.push_back({key, std::bit_cast<int64_t>(v)});
}
uint64_t rand_u(uint64_t seed, uint64_t i) {
  FillSpec f;
  f.seed = seed;
  f.range = std::pair{int64_t{0}, int64_t{1} << 40};
  return static_cast<uint64_t>(generated_value(DType::int64, f, i));
}

const TensorView* find(const Problem& p, const std::vector<TensorView>& in,
                       const std::string& name) {
  for (size_t i = 0; i < p.inputs.size(); ++i)
    if (p.inputs[i].name == name) return &in[i];
  return nullptr;
}
std::optional<TensorView> opt(const TensorView* v) {
  return v ? std::optional<TensorView>(*v) : std::nullopt;
}

// The lengths of a case: q from `lengths`, kv from kv= / delta=.
struct Lens {
  std::vector<int64_t> q, kv;
  int64_t B = 0;
};
Status make_lens(const CaseRow& row, const Tags& tags, Lens* L) {
  const CaseSpec& cs = *row.spec;
  if (!cs.lengths) return case_error(row, "needs `lengths` (the q lengths)");
  L->q = make_lengths(*cs.lengths, cs.seed);
  L->B = static_cast<int64_t>(L->q.size());
  if (has(tags, "kv")) {
    L->kv = tag_list(tags, "kv");
    if (static_cast<int64_t>(L->kv.size()) != L->B)
      return case_error(row, "kv= needs one length per batch");
  } else {
    const int64_t delta = tag_int(tags, "delta", 0);
    for (int64_t x : L->q) L->kv.push_back(std::max<int64_t>(0, x + delta));
  }
  return Status::Ok();
}
int64_t max_blocks(const std::vector<int64_t>& v, int64_t bs) {
  int64_t m = 0;
  for (int64_t x : v) m = std::max(m, ops::stem::ceil_div(x, bs));
  return m;
}

// ============================== stem_indexer (+ metadata) ==============================

class StemIndexerDriver final : public Driver {
 public:
  std::vector<std::string> ops() const override {
    return {"stem_indexer", "stem_indexer_metadata"};
  }
  std::string folder() const override { return "stem/indexer"; }
  std::set<std::string> fields(const std::string&) const override {
    return {"shape", "lengths", "scale"};
  }
  DType default_dtype(const std::string&) const override { return DType::bf16; }

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
    const std::string bad = tag_str(tags, "bad");
    p->sizes = {{"B", B}, {"Nq", Nq}, {"Nk", Nk}, {"Df", Df}, {"bs", Bs}, {"ts", Ts}};
    p->sizes.push_back({"causal", has(tags, "noncausal") ? 0 : 1});
    p->sizes.push_back({"window", tag_int(tags, "window", 4)});
    if (row.op == "stem_indexer_metadata") {
      p->inputs.push_back(int_input("q_seq_lens", DType::int32, L.q));
      p->inputs.push_back(
          int_input("kv_seq_lens", bad == "lens_dtype" ? DType::int64 : DType::int32, L.kv));
      StemIndexerMetadataArgs a = meta_args(*p, views(p->inputs));
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
    const std::string scores = tag_str(tags, "scores");
    const DType qt = bad == "qflat_dtype" ? DType::fp32 : DType::bf16;
    Shape qs = {B, Nq, Qmax, Df};
    if (bad == "qflat_rank") qs = {B * Nq, Qmax, Df};
    p->inputs.push_back(data_input("qflat", qt, qs, seed(), cs.scale));
    // kflat: every other batch of a [2B, ...] buffer when kslice.
    const bool kslice = has(tags, "kslice");
    const int64_t kdf = bad == "df_mismatch" ? Df + Ts : Df;
    Input k =
        data_input("kflat", DType::bf16, {kslice ? 2 * B : B, Nk, Kmax, kdf}, seed(), cs.scale);
    if (kslice) {
      k.view.sizes[0] = B;
      k.view.strides[0] *= 2;
    }
    p->inputs.push_back(std::move(k));
    Shape vs = {B, Nk, Kmax};
    if (bad == "vbias_shape") vs = {B, Nk, Kmax + 1};
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
    if (has(tags, "prompt") || has(tags, "prompt_extra")) {
      std::vector<int64_t> lp = tag_list(tags, "prompt");
      if (lp.empty())
        for (int64_t x : L.kv) lp.push_back(x + tag_int(tags, "prompt_extra", 0));
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
    if (has(tags, "meta")) {
      // The plan as the binding would make it, for these lengths and heads (or stale ones).
      StemIndexerMetadataArgs m;
      std::vector<int64_t> mq = L.q;
      if (bad == "meta_stale" && B > 0) mq[0] += 1;
      Input mql = int_input("mq", DType::int32, mq);
      Input mkl = int_input("mk", DType::int32, L.kv);
      m.q_seq_lens = mql.view;
      m.kv_seq_lens = mkl.view;
      m.q_heads = Nq;
      m.kv_heads = Nk;
      m.causal = !has(tags, "noncausal");
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
    Shape si, sl;
    p->shape_error = stem_indexer_shape(args(*p, views(p->inputs),
                                             prec == 2   ? 2
                                             : prec == 3 ? 3
                                                         : 1),
                                        &si, &sl);
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
    if (prec == 2) s = ops::stem::round_bf16(s);
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
    ops::stem::StemRules r;
    r.causal = a0.causal;
    r.Bs = a0.stem_block_size;
    r.initial_blocks = a0.initial_blocks;
    r.window_size = a0.window_size;
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
          const int64_t V = ops::stem::visible_blocks(r, ql[b], kl[b], pl[b], i);
          const auto F = ops::stem::forced_set(r, V);
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
            if (ops::stem::is_forced(F, jj) && !in_a[jj]) {
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
            if (in_e[jj] && !ops::stem::is_forced(F, jj))
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

// K/V inputs of prepare and attention: packed (with cu_seqlens_kv) or paged (page size PS, with
// a shuffled block table and spare pages).
Status make_kv(const CaseRow& row, const Tags& tags, const Lens& L, DType dt, int64_t Nk, int64_t D,
               int64_t Dv, uint64_t seed_k, uint64_t seed_v, double scale, Problem* p) {
  const int64_t ps = tag_int(tags, "paged", 0);
  const std::string bad = tag_str(tags, "bad");
  if (ps == 0) {
    std::vector<int64_t> cu = {0};
    for (int64_t x : L.kv) cu.push_back(cu.back() + x);
    const DType kdt = bad == "dtype_mix" ? (dt == DType::bf16 ? DType::fp16 : DType::bf16) : dt;
    p->inputs.push_back(data_input("k", kdt, {cu.back(), Nk, D}, seed_k, scale));
    p->inputs.push_back(data_input("v", dt, {cu.back(), Nk, Dv}, seed_v, scale));
    if (bad != "no_kv_layout") p->inputs.push_back(int_input("cu_seqlens_kv", DType::int32, cu));
    return Status::Ok();
  }
  int64_t max_pages = 0, used = 0;
  for (int64_t x : L.kv) {
    max_pages = std::max(max_pages, ops::stem::ceil_div(x, ps));
    used += ops::stem::ceil_div(x, ps);
  }
  const int64_t pages = used + 3;
  std::vector<int64_t> perm(static_cast<size_t>(pages));
  for (int64_t i = 0; i < pages; ++i) perm[i] = i;
  for (int64_t i = pages - 1; i > 0; --i)
    std::swap(perm[i], perm[rand_u(row.spec->seed + 77, static_cast<uint64_t>(i)) % (i + 1)]);
  std::vector<int64_t> table(static_cast<size_t>(L.B * std::max<int64_t>(max_pages, 1)), pages - 1);
  int64_t next = 0;
  for (int64_t b = 0; b < L.B; ++b)
    for (int64_t q = 0; q < ops::stem::ceil_div(L.kv[b], ps); ++q)
      table[b * std::max<int64_t>(max_pages, 1) + q] = perm[next++];
  if (bad == "page_id" && !table.empty()) table[0] = pages;
  p->inputs.push_back(data_input("k", dt, {pages, ps, Nk, D}, seed_k, scale));
  p->inputs.push_back(data_input("v", dt, {pages, ps, Nk, Dv}, seed_v, scale));
  p->inputs.push_back(
      int_input("block_table", DType::int32, table, {L.B, std::max<int64_t>(max_pages, 1)}));
  if (bad == "both_kv_layouts") {
    std::vector<int64_t> cu(static_cast<size_t>(L.B + 1), 0);
    p->inputs.push_back(int_input("cu_seqlens_kv", DType::int32, cu));
  }
  return Status::Ok();
}

// ==================================== stem_prepare ====================================

class StemPrepareDriver final : public Driver {
 public:
  std::vector<std::string> ops() const override { return {"stem_prepare"}; }
  std::string folder() const override { return "stem/prepare"; }
  std::set<std::string> fields(const std::string&) const override {
    return {"shape", "lengths", "scale"};
  }
  DType default_dtype(const std::string&) const override { return DType::bf16; }

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const Tags tags = tags_of(cs);
    p->op = row.op;
    p->dtype = row.dtype.value_or(DType::bf16);
    if (!cs.shape || cs.shape->size() < 3 || cs.shape->size() > 4)
      return case_error(row, "needs `shape: [Nq, Nk, D]` or `[Nq, Nk, D, Dv]`");
    const int64_t Nq = (*cs.shape)[0], Nk = (*cs.shape)[1], D = (*cs.shape)[2];
    const int64_t Dv = cs.shape->size() == 4 ? (*cs.shape)[3] : D;
    Lens L;
    RECOPS_RETURN_IF_ERROR(make_lens(row, tags, &L));
    const std::string bad = tag_str(tags, "bad");
    uint64_t slot = 1;
    auto seed = [&] { return tensor_seed(cs.seed, slot++); };
    std::vector<int64_t> cu = {0};
    for (int64_t x : L.q) cu.push_back(cu.back() + x);
    const double scale = cs.scale;
    p->inputs.push_back(data_input("q", p->dtype, {cu.back(), Nq, D}, seed(), scale));
    const uint64_t sk = seed(), sv = seed();
    RECOPS_RETURN_IF_ERROR(make_kv(row, tags, L, p->dtype, Nk, D, Dv, sk, sv, scale, p));
    if (bad == "cu_not_monotone" && cu.size() > 2) std::swap(cu[1], cu[2]);
    p->inputs.push_back(int_input("cu_seqlens_q", DType::int32, cu));
    p->inputs.push_back(int_input("kv_seq_lens", DType::int32, L.kv));
    // Scales in [0.5, 1.5].
    auto scale_input = [&](const std::string& name, Shape shape) {
      Input s = data_input(name, DType::fp32, shape, seed(), 0.5);
      auto* f = static_cast<float*>(s.buf.data());
      for (int64_t i = 0; i < s.buf.numel(); ++i) f[i] += 1.0f;
      p->inputs.push_back(std::move(s));
    };
    const int64_t ps = tag_int(tags, "paged", 0);
    const Shape& kshape = p->inputs[1].view.shape();
    if (has(tags, "qscale"))
      scale_input("q_scale", tag_str(tags, "qscale") == "token" ? Shape{cu.back(), Nq} : Shape{1});
    if (has(tags, "kscale"))
      scale_input("k_scale", tag_str(tags, "kscale") != "token" ? Shape{1}
                             : ps                               ? Shape{kshape[0], ps, Nk}
                                                                : Shape{kshape[0], Nk});
    if (has(tags, "vscale"))
      scale_input("v_scale", tag_str(tags, "vscale") == "head" ? Shape{Nk} : Shape{1});
    p->sizes = {{"B", L.B}, {"Nq", Nq}, {"Nk", Nk}, {"D", D}, {"Dv", Dv}, {"page_size", ps}};
    p->sizes.push_back({"bs", tag_int(tags, "bs", 128)});
    p->sizes.push_back({"ts", tag_int(tags, "ts", 16)});
    p->sizes.push_back({"qmax", tag_int(tags, "qmax", -1)});
    p->sizes.push_back({"kmax", tag_int(tags, "kmax", -1)});
    put_real(p, "lambda", tag_double(tags, "lambda", 0.3));
    Shape sq, sk2, sv2;
    p->shape_error = stem_prepare_shape(args(*p, views(p->inputs)), &sq, &sk2, &sv2);
    if (!p->shape_error.ok()) return Status::Ok();
    p->outputs = {
        {"qflat", sq, DType::bf16}, {"kflat", sk2, DType::bf16}, {"vbias", sv2, DType::fp32}};
    return Status::Ok();
  }

  static StemPrepareArgs args(const Problem& p, const std::vector<TensorView>& in) {
    StemPrepareArgs a;
    a.q = *find(p, in, "q");
    a.k = *find(p, in, "k");
    a.v = *find(p, in, "v");
    a.cu_seqlens_q = *find(p, in, "cu_seqlens_q");
    a.kv_seq_lens = *find(p, in, "kv_seq_lens");
    a.cu_seqlens_kv = opt(find(p, in, "cu_seqlens_kv"));
    a.block_table = opt(find(p, in, "block_table"));
    a.q_scale = opt(find(p, in, "q_scale"));
    a.k_scale = opt(find(p, in, "k_scale"));
    a.v_scale = opt(find(p, in, "v_scale"));
    a.max_q_blocks = size_of(p, "qmax", -1);
    a.max_kv_blocks = size_of(p, "kmax", -1);
    a.stem_block_size = size_of(p, "bs", 128);
    a.stem_stride = size_of(p, "ts", 16);
    a.lambda_mag = real_of(p, "lambda", 0.3);
    return a;
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return stem_prepare(args(p, in), out[0], out[1], out[2], ctx);
  }

  // Spec §11 rule 7: qflat/kflat within 1 bf16 ulp (exact zeros where the golden is zero, i.e.
  // padding), vbias within 1e-5 + 1e-4·|g|; a poisoned (unwritten) element fails either rule.
  std::optional<Judgement> judge_outputs(const Problem& p, const std::vector<Tensor>& out,
                                         const std::vector<Tensor>& gold) const override {
    Judgement j;
    auto fail = [&](const std::string& why) {
      ++j.mismatched;
      if (j.pass) j.detail = why;
      j.pass = false;
    };
    for (int o = 0; o < 2; ++o) {
      const auto* a = static_cast<const uint16_t*>(out[o].data());
      const auto* g = static_cast<const uint16_t*>(gold[o].data());
      const int64_t n = out[o].numel(), Df = out[o].shape().back();
      // [recops] a sum that cancels to (near) zero has no meaningful bf16 ulp: the fp32
      // accumulation-noise floor 2^-16·max|golden| applies there; padding rows (all zero in the
      // golden) must be exactly zero.
      double gmax = 0;
      for (int64_t i = 0; i < n; ++i) gmax = std::max(gmax, std::fabs(to_double(BFloat16{g[i]})));
      auto ordered = [](uint16_t h) {
        return (h & 0x8000) ? -static_cast<int32_t>(h & 0x7fff) : static_cast<int32_t>(h);
      };
      for (int64_t r0 = 0; r0 < n; r0 += Df) {
        bool padding = true;
        for (int64_t i = r0; i < r0 + Df && padding; ++i) padding = (g[i] & 0x7fff) == 0;
        for (int64_t i = r0; i < r0 + Df; ++i) {
          const double va = to_double(BFloat16{a[i]}), vg = to_double(BFloat16{g[i]});
          const bool ok = padding ? (a[i] & 0x7fff) == 0
                                  : va == va && (std::abs(ordered(a[i]) - ordered(g[i])) <= 1 ||
                                                 std::fabs(va - vg) <= 0x1p-16 * gmax);
          if (va == va) j.max_abs = std::max(j.max_abs, std::fabs(va - vg));
          if (!ok)
            fail(p.outputs[o].name + "[" + std::to_string(i) + "] = " + std::to_string(va) +
                 ", golden " + std::to_string(vg) +
                 (padding ? " (padding must be exactly zero)" : " (more than 1 bf16 ulp)"));
        }
      }
    }
    const auto* a = static_cast<const float*>(out[2].data());
    const auto* g = static_cast<const float*>(gold[2].data());
    for (int64_t i = 0; i < out[2].numel(); ++i) {
      const double d = std::fabs(static_cast<double>(a[i]) - g[i]);
      if (!(d <= 1e-5 + 1e-4 * std::fabs(g[i])))
        fail("vbias[" + std::to_string(i) + "] = " + std::to_string(a[i]) + ", golden " +
             std::to_string(g[i]));
      if (d == d) j.max_abs = std::max(j.max_abs, d);
    }
    return j;
  }

  double bytes(const Problem& p) const override { return io_bytes(p); }
};

// =============================== block_sparse_attention ===============================

class BlockSparseAttentionDriver final : public Driver {
 public:
  std::vector<std::string> ops() const override { return {"block_sparse_attention"}; }
  std::string folder() const override { return "stem/block_sparse_attention"; }
  std::set<std::string> fields(const std::string&) const override {
    return {"shape", "lengths", "scale"};
  }
  DType default_dtype(const std::string&) const override { return DType::bf16; }

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const Tags tags = tags_of(cs);
    p->op = row.op;
    p->dtype = row.dtype.value_or(DType::bf16);
    if (!cs.shape || cs.shape->size() != 3) return case_error(row, "needs `shape: [Nq, Nk, D]`");
    const int64_t Nq = (*cs.shape)[0], Nk = (*cs.shape)[1], D = (*cs.shape)[2];
    Lens L;
    RECOPS_RETURN_IF_ERROR(make_lens(row, tags, &L));
    const int64_t B = L.B, Bs = tag_int(tags, "bs", 128);
    const bool causal = !has(tags, "noncausal");
    const std::string bad = tag_str(tags, "bad"), sel = tag_str(tags, "sel");
    uint64_t slot = 1;
    auto seed = [&] { return tensor_seed(cs.seed, slot++); };
    std::vector<int64_t> cu = {0};
    for (int64_t x : L.q) cu.push_back(cu.back() + x);
    p->inputs.push_back(data_input("q", p->dtype, {cu.back(), Nq, D}, seed(), cs.scale));
    const uint64_t sk = seed(), sv = seed();
    RECOPS_RETURN_IF_ERROR(make_kv(row, tags, L, p->dtype, Nk, D, D, sk, sv, cs.scale, p));
    p->inputs.push_back(int_input("cu_seqlens_q", DType::int32, cu));
    p->inputs.push_back(int_input("kv_seq_lens", DType::int32, L.kv));
    // The selection: per row (b, hq, i), ids of [0, Kb) in a shuffled order.
    const int64_t Qmax = tag_int(tags, "qmax", max_blocks(L.q, Bs)),
                  Kmax = tag_int(tags, "kmax", max_blocks(L.kv, Bs));
    std::vector<int64_t> ids(static_cast<size_t>(B * Nq * Qmax * Kmax), -1),
        lens(static_cast<size_t>(B * Nq * Qmax), 0);
    const uint64_t ss = seed();
    ops::stem::StemRules r;
    r.causal = causal;
    r.Bs = Bs;
    uint64_t n = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hq = 0; hq < Nq; ++hq)
        for (int64_t i = 0; i < std::min(Qmax, ops::stem::ceil_div(L.q[b], Bs)); ++i) {
          const int64_t row_id = (b * Nq + hq) * Qmax + i;
          const int64_t Kb = ops::stem::ceil_div(L.kv[b], Bs);
          std::vector<int64_t> pool;
          if (sel == "all") {
            for (int64_t j = 0; j < ops::stem::visible_blocks(r, L.q[b], L.kv[b], L.kv[b], i); ++j)
              pool.push_back(j);
          } else if (sel != "empty") {
            for (int64_t j = 0; j < Kb; ++j)
              if (rand_u(ss, n++) % 3 != 0) pool.push_back(j);
          }
          for (int64_t t = static_cast<int64_t>(pool.size()) - 1; t > 0; --t)
            std::swap(pool[t], pool[rand_u(ss, n++) % (t + 1)]);
          if (bad == "dup_id" && pool.size() >= 2) pool[1] = pool[0];
          if (bad == "oob_id" && !pool.empty()) pool[0] = Kb;
          for (size_t t = 0; t < pool.size(); ++t) ids[row_id * Kmax + t] = pool[t];
          lens[row_id] = static_cast<int64_t>(pool.size());
        }
    p->inputs.push_back(int_input("sparse_indices", DType::int32, ids, {B, Nq, Qmax, Kmax}));
    p->inputs.push_back(int_input("sparse_seq_len", DType::int32, lens, {B, Nq, Qmax}));
    p->sizes = {{"B", B}, {"Nq", Nq}, {"Nk", Nk}, {"D", D}, {"bs", Bs}, {"causal", causal}};
    p->sizes.push_back({"page_size", tag_int(tags, "paged", 0)});
    p->sizes.push_back({"fa_rows", tag_int(tags, "fa_rows", 0)});
    if (has(tags, "softmax_scale"))
      put_real(p, "softmax_scale", tag_double(tags, "softmax_scale", 1));
    Shape so, sl;
    p->shape_error = block_sparse_attention_shape(args(*p, views(p->inputs)), &so, &sl);
    if (!p->shape_error.ok()) return Status::Ok();
    p->outputs = {{"out", so, p->dtype}, {"lse", sl, DType::fp32}};
    return Status::Ok();
  }

  static BlockSparseAttentionArgs args(const Problem& p, const std::vector<TensorView>& in) {
    BlockSparseAttentionArgs a;
    a.q = *find(p, in, "q");
    a.k = *find(p, in, "k");
    a.v = *find(p, in, "v");
    a.sparse_indices = *find(p, in, "sparse_indices");
    a.sparse_seq_len = *find(p, in, "sparse_seq_len");
    a.cu_seqlens_q = *find(p, in, "cu_seqlens_q");
    a.kv_seq_lens = *find(p, in, "kv_seq_lens");
    a.cu_seqlens_kv = opt(find(p, in, "cu_seqlens_kv"));
    a.block_table = opt(find(p, in, "block_table"));
    for (const auto& [k, v] : p.sizes)
      if (k == "softmax_scale") a.softmax_scale = std::bit_cast<double>(v);
    a.causal = size_of(p, "causal") != 0;
    a.sparse_block_size = size_of(p, "bs", 128);
    return a;
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    // fa_rows=16|32: cuda_sm80_fa's rows per warp (D = 128), forced (others ignore it).
    Context c = ctx;
    TuneConfig forced;
    if (size_of(p, "fa_rows") > 0 && ctx.tune_config == nullptr) {
      forced.set("rows_per_warp", size_of(p, "fa_rows"));
      c.tune_config = &forced;
    }
    return block_sparse_attention(args(p, in), out[0], out[1], c);
  }
  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    return block_sparse_attention_plain(args(p, views(p.inputs)), o[0], o[1]);
  }
  // 4·D per allowed (query token, key) pair (QKᵀ and PV), counted from the selection.
  double flops(const Problem& p) const override {
    if (!p.shape_error.ok()) return -1;
    const auto a = args(p, views(p.inputs));
    const auto* cu = static_cast<const int32_t*>(a.cu_seqlens_q.data);
    const auto* kl = static_cast<const int32_t*>(a.kv_seq_lens.data);
    const auto* len = static_cast<const int32_t*>(a.sparse_seq_len.data);
    const auto* ids = static_cast<const int32_t*>(a.sparse_indices.data);
    const int64_t Nq = a.q.sizes[1], Qmax = a.sparse_indices.sizes[2],
                  Kmax = a.sparse_indices.sizes[3], Bs = a.sparse_block_size;
    double pairs = 0;
    for (int64_t b = 0; b < a.sparse_indices.sizes[0]; ++b) {
      const int64_t Lq = cu[b + 1] - cu[b], Lk = kl[b];
      for (int64_t hq = 0; hq < Nq; ++hq)
        for (int64_t t = 0; t < Lq; ++t) {
          const int64_t row = (b * Nq + hq) * Qmax + t / Bs;
          for (int64_t u = 0; u < len[row]; ++u) {
            const int64_t s0 = ids[row * Kmax + u] * Bs;
            const int64_t hi = std::min(s0 + Bs, a.causal ? std::min(Lk, Lk - Lq + t + 1) : Lk);
            pairs += static_cast<double>(std::max<int64_t>(0, hi - s0));
          }
        }
    }
    return 4.0 * static_cast<double>(a.q.sizes[2]) * pairs;
  }
  double bytes(const Problem& p) const override { return io_bytes(p); }
};

}  // namespace

RECOPS_REGISTER_DRIVER(StemPrepareDriver);

RECOPS_REGISTER_DRIVER(BlockSparseAttentionDriver);

RECOPS_REGISTER_DRIVER(StemIndexerDriver);

}  // namespace recops::cli
