// tools/recops/drivers/hstu_attn.cpp: hstu_attn_fwd and hstu_attn_bwd (hstu_attention.md), one
// driver for the family. Standard: double (accuracy.md): golden = the fp64 reference rounded once
// to the dtype, baseline = the reference run in the dtype (hstu_attn_*_plain).
//
// Case fields (the common case-file fields, read this way):
//   shape: [Hq, Hk, d] or [Hq, Hk, d, dv]          heads and head dims (dv defaults to d)
//   lengths / offsets: the q lengths (jagged); explicit `offsets` are used as seq_offsets_q
//   offsets_dtype: of seq_offsets_q/_k, num_contexts, num_targets and the page tensors
//   max_seq_len: max_seq_len_q (default max Lq); scale: of q, k, v, rab, dout values
// Features are tags `name` or `name=value`:
//   dense                 dense layout [B, S, H, d], every length = the lengths' maximum
//   mask=causal|anti_causal|none|custom   (custom draws a random bool mask [B, Hq, Sq, Sk])
//   mask_heads=1          custom mask broadcast over heads
//   window=L:R            local window (mask causal); -1 unbounded
//   contexts=N|rand, targets=N|rand, group=G     per-sequence counts (N as given, rand in [0,
//   Lk/3]) rab, rab=1            relative bias [B, Hq, Sq, Sk] (rab=1: [B, 1, Sq, Sk], head
//   broadcast) func=N                interval mask with nfunc = N (random increasing bounds)
//   delta=N               Lk = Lq + N (delta-q, the last query aligned with the last key)
//   paged=PS              paged KV cache, page size PS, 0..3*PS cached tokens per sequence
//   alpha=X, silu_scale=X, attn_scale     scales (attn_scale: random per-token fp32 in [0.5, 1.5])
//   max_k=N               max_seq_len_k (default the maximum Lk)
//   bad=WHAT              one deliberate spec §5 violation: k_rank, k_dtype, k_d, v_heads,
//                         rab_shape, mask_shape, mask_no_custom, page_id, last_page_len,
//                         attn_scale_shape, dout_shape
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>

#include "core/hash_rng.h"
#include "core/kit/op_def.h"
#include "recops/hstu.h"
#include "tools/recops/inputs.h"
#include "tools/recops/gen.h"
#include "tools/recops/tag_value.h"

namespace recops::cli {
namespace {

// The tags of a case as name -> value ("" for a bare tag).
std::map<std::string, std::string> feature_tags(const CaseSpec& cs) {
  std::map<std::string, std::string> m;
  for (const auto& t : cs.tags) {
    const auto eq = t.find('=');
    if (eq == std::string::npos) {
      m[t] = "";
    } else {
      m[t.substr(0, eq)] = t.substr(eq + 1);
    }
  }
  return m;
}

int64_t size_of(const Problem& p, const std::string& key, int64_t dflt = 0) {
  for (const auto& [k, v] : p.sizes)
    if (k == key) return v;
  return dflt;
}

// The mask type named `name` as recops.hstu_attn takes it (the names of mask_type's Python face
// in the op's argument table, hstu_attn.cpp), or -1.
int64_t mask_type_named(const std::string& name) {
  const kit::OpDef* d = kit::find_def("hstu_attn_fwd");
  for (const auto& a : d ? d->args : std::vector<kit::ArgDef>{}) {
    if (a.name != "mask_type" || !a.opts.py.names) continue;
    std::istringstream names(a.opts.py.names);
    int64_t i = 0;
    for (std::string n; names >> n; ++i)
      if (n == name) return i;
  }
  return -1;
}

// Random integer in [lo, hi] from (seed, i).
// The int64 generator of gen.h's fills, taken directly (exact past 2^53, where the fills' double
// would round).
int64_t rand_int(uint64_t seed, uint64_t i, int64_t lo, int64_t hi) {
  return core::uniform_int(seed, i, lo, hi);
}

// a + b, saturated at the int64 limits (case-file tags may be anything; a wrapped length would
// size a tensor wrongly; a saturated one is refused by the allocation with an error).
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
// a - b, saturated likewise (explicit offsets may be anything).
int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

class HstuAttn final : public Driver {
 public:
  std::vector<std::string> ops() const override { return {"hstu_attn_fwd", "hstu_attn_bwd"}; }
  std::string folder() const override { return "hstu/hstu_attn"; }
  // The tags this driver reads (docs/cases.md); any other is refused.
  std::optional<std::set<std::string>> tags(const std::string&) const override {
    return std::set<std::string>{"alpha", "attn_scale", "bad",     "contexts",   "delta", "dense",
                                 "func",  "group",      "mask",    "mask_heads", "max_k", "paged",
                                 "rab",   "silu_scale", "targets", "window"};
  }
  std::set<std::string> fields(const std::string&) const override {
    return {"shape", "lengths", "offsets", "offsets_dtype", "max_seq_len", "scale"};
  }
  DType default_dtype(const std::string&) const override { return DType::fp32; }

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    auto tags = feature_tags(cs);
    auto tag = [&](const std::string& k) { return tags.count(k) > 0; };
    auto tag_int = [&](const std::string& k, int64_t dflt) {
      return tag(k) && !tags[k].empty() ? tag_to_int(k, tags[k]) : dflt;
    };
    p->op = row.op;
    p->dtype = row.dtype.value_or(DType::fp32);
    const DType dt = p->dtype, it = row.offsets_dtype;
    if (!cs.shape || cs.shape->size() < 3 || cs.shape->size() > 4)
      return case_error(row, "needs `shape: [Hq, Hk, d]` or `[Hq, Hk, d, dv]`");
    const int64_t Hq = (*cs.shape)[0], Hk = (*cs.shape)[1], d = (*cs.shape)[2];
    const int64_t dv = cs.shape->size() == 4 ? (*cs.shape)[3] : d;
    const bool dense = tag("dense");
    const std::string bad = tag("bad") ? tags["bad"] : "";
    uint64_t slot = 1;
    auto seed = [&] { return tensor_seed(cs.seed, slot++); };

    // Lengths and offsets.
    std::vector<int64_t> off_q;
    if (cs.lengths) {
      off_q = offsets_from_lengths(make_lengths(*cs.lengths, cs.seed));
    } else if (cs.offsets) {
      off_q = *cs.offsets;
    } else {
      return case_error(row, "needs `lengths` or `offsets`");
    }
    const int64_t B = static_cast<int64_t>(off_q.size()) - 1;
    std::vector<int64_t> Lq(static_cast<size_t>(std::max<int64_t>(B, 0)));
    int64_t max_lq = 0;
    for (int64_t b = 0; b < B; ++b) {
      Lq[b] = sat_sub(off_q[b + 1], off_q[b]);
      max_lq = std::max(max_lq, Lq[b]);
    }
    if (dense) {
      for (auto& l : Lq) l = max_lq;
      off_q = offsets_from_lengths(Lq);
    }
    const int64_t delta = tag_int("delta", 0);
    const int64_t ps = tag_int("paged", 0);
    std::vector<int64_t> Lnew(Lq.size()), cached(Lq.size(), 0), Lk(Lq.size());
    int64_t max_lk = 0;
    for (int64_t b = 0; b < B; ++b) {
      Lnew[b] = std::max<int64_t>(0, sat_add(Lq[b], delta));
      // Up to 3 pages cached (the bound saturates for a page size past int64 / 3).
      if (ps > 0)
        cached[b] = rand_int(cs.seed, 1000 + static_cast<uint64_t>(b), 0,
                             ps > INT64_MAX / 3 ? INT64_MAX : 3 * ps);
      Lk[b] = sat_add(cached[b], Lnew[b]);
      max_lk = std::max(max_lk, Lk[b]);
    }
    const std::vector<int64_t> off_k = offsets_from_lengths(Lnew);
    const int64_t Sq = cs.max_seq_len.value_or(max_lq);
    const int64_t Sk = tag_int("max_k", dense ? sat_add(max_lq, delta) : max_lk);
    const int64_t total_q = off_q.empty() ? 0 : off_q.back();
    const int64_t total_k = off_k.empty() ? 0 : off_k.back();
    const int64_t nq_tok = dense ? TensorView::mul_sat(B, max_lq) : total_q;
    const double scale = cs.scale;

    // q, k, v.
    const Shape qs = dense ? Shape{B, max_lq, Hq, d} : Shape{total_q, Hq, d};
    Shape ks = dense ? Shape{B, sat_add(max_lq, delta), Hk, d} : Shape{total_k, Hk, d};
    Shape vs = dense ? Shape{B, sat_add(max_lq, delta), Hk, dv} : Shape{total_k, Hk, dv};
    if (bad == "k_d") ks.back() = sat_add(d, 1);
    if (bad == "v_heads") vs[vs.size() - 2] = sat_add(Hk, 1);
    if (bad == "k_rank") ks = Shape{1, total_k, Hk, d};
    p->inputs.push_back(data_input("q", dt, qs, seed(), scale));
    p->inputs.push_back(
        data_input("k", bad == "k_dtype" ? (dt == DType::fp32 ? DType::bf16 : DType::fp32) : dt, ks,
                   seed(), scale));
    p->inputs.push_back(data_input("v", dt, vs, seed(), scale));
    if (!dense) {
      Input oq = int_input("seq_offsets_q", it, off_q);
      p->inputs.push_back(std::move(oq));
      p->inputs.push_back(int_input("seq_offsets_k", it, off_k));
    }
    // Mask configuration.
    auto counts = [&](const std::string& name, uint64_t salt) {
      std::vector<int64_t> c(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b)
        c[b] = tags[name] == "rand"
                   ? rand_int(cs.seed, salt + static_cast<uint64_t>(b), 0, Lk[b] / 3)
                   : tag_to_int(name, tags[name]);
      return c;
    };
    if (tag("contexts"))
      p->inputs.push_back(int_input("num_contexts", it, counts("contexts", 2000)));
    if (tag("targets")) p->inputs.push_back(int_input("num_targets", it, counts("targets", 3000)));
    const std::string mask = tag("mask") ? tags["mask"] : "causal";
    int64_t mask_type = mask_type_named(mask);
    if (mask_type < 0) return case_error(row, "unknown mask '" + mask + "'");
    const bool custom = static_cast<HstuMaskType>(mask_type) == HstuMaskType::custom;
    if (custom || bad == "mask_no_custom") {
      const int64_t hm = tag_int("mask_heads", Hq);
      Shape ms = {B, hm, Sq, bad == "mask_shape" ? sat_add(Sk, 1) : Sk};
      Input m;
      m.name = "mask";
      m.buf = Tensor::empty(ms, DType::boolean);
      m.view = m.buf.view();
      const uint64_t s = seed();
      auto* mp = static_cast<uint8_t*>(m.buf.data());
      for (int64_t i = 0; i < m.buf.numel(); ++i)
        mp[i] = static_cast<uint8_t>(rand_int(s, static_cast<uint64_t>(i), 0, 3) != 0);
      p->inputs.push_back(std::move(m));
      if (bad == "mask_no_custom") mask_type = static_cast<int64_t>(HstuMaskType::causal);
    }
    if (tag("func")) {
      // The tensor first: its size is checked (func=2^62 overflowed a host vector's size).
      const int64_t nf = tags["func"].empty() ? 3 : tag_to_int_at_least("func", tags["func"], 0);
      const int64_t hf = 1;
      Input fi;
      fi.name = "func";
      fi.buf = Tensor::empty(Shape{hf, nf, nq_tok}, DType::int32);
      fi.view = fi.buf.view();
      std::memset(fi.buf.data(), 0, static_cast<size_t>(fi.buf.nbytes()));
      const uint64_t s = seed();
      for (int64_t b = 0; b < B && fi.buf.numel() > 0; ++b) {
        // The tokens of sequence b that are in the tensor (explicit offsets may be invalid).
        const int64_t first = dense ? b * max_lq : off_q[b];
        const int64_t lo = std::max<int64_t>(0, sat_sub(0, first));
        const int64_t hi = std::min(Lq[b], sat_sub(nq_tok, first));
        for (int64_t i = lo; i < hi; ++i) {
          const int64_t tok = first + i;
          int64_t prev = 0;
          for (int64_t j = 0; j < nf; ++j) {
            const int64_t step = rand_int(s, static_cast<uint64_t>(tok * nf + j), 0,
                                          std::max<int64_t>(1, Lk[b] / 2));
            prev = std::min(sat_add(prev, step), sat_add(Lk[b], 1));
            store_int(static_cast<int32_t*>(fi.buf.data()) + j * nq_tok + tok, DType::int32, prev);
          }
        }
      }
      p->inputs.push_back(std::move(fi));
    }
    if (tag("rab")) {
      const int64_t hr = tags["rab"] == "1" ? 1 : Hq;
      p->inputs.push_back(data_input(
          "rab", dt, Shape{B, hr, Sq, bad == "rab_shape" ? sat_add(Sk, 3) : Sk}, seed(), scale));
    }
    if (tag("attn_scale")) {
      Input a =
          data_input("attn_scale", DType::fp32,
                     Shape{bad == "attn_scale_shape" ? sat_add(nq_tok, 1) : nq_tok}, seed(), 0.5);
      auto* ap = static_cast<float*>(a.buf.data());
      for (int64_t i = 0; i < a.buf.numel(); ++i) ap[i] += 1.0f;
      p->inputs.push_back(std::move(a));
    }
    if (ps > 0) {
      std::vector<int64_t> page_off = {0}, last(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b) {
        const int64_t np = cached[b] / ps + (cached[b] % ps != 0);
        page_off.push_back(page_off.back() + np);
        last[b] = np == 0 ? 0 : cached[b] - (np - 1) * ps;
      }
      if (bad == "last_page_len" && B > 0) last[0] = ps + 1;
      const int64_t num_pages = page_off.back() + 3;
      std::vector<int64_t> ids(static_cast<size_t>(page_off.back()));
      for (size_t j = 0; j < ids.size(); ++j)
        ids[j] = rand_int(cs.seed, 4000 + j, 0, num_pages - 1);
      if (bad == "page_id" && !ids.empty()) ids[0] = num_pages;
      p->inputs.push_back(
          data_input("kv_cache", dt, Shape{num_pages, 2, ps, Hk, d}, seed(), scale));
      p->inputs.push_back(int_input("page_offsets", it, page_off));
      p->inputs.push_back(int_input("page_ids", it, ids));
      p->inputs.push_back(int_input("last_page_len", it, last));
    }
    p->sizes = {{"B", B},   {"Hq", Hq},           {"Hk", Hk},
                {"d", d},   {"dv", dv},           {"Sq", Sq},
                {"Sk", Sk}, {"total_q", total_q}, {"total_k", total_k}};
    p->sizes.push_back({"mask_type", mask_type});
    if (tag("window")) {
      const std::string w = tags["window"];
      const auto colon = w.find(':');
      if (colon == std::string::npos) return case_error(row, "window=L:R expected");
      p->sizes.push_back({"window_left", tag_to_int("window", w.substr(0, colon))});
      p->sizes.push_back({"window_right", tag_to_int("window", w.substr(colon + 1))});
    }
    if (tag("group")) p->sizes.push_back({"group", tag_int("group", 1)});
    // Real scalars travel as their bit patterns.
    if (tag("alpha"))
      p->sizes.push_back(
          {"alpha_bits", std::bit_cast<int64_t>(tag_to_double("alpha", tags["alpha"]))});
    if (tag("silu_scale"))
      p->sizes.push_back({"silu_scale_bits",
                          std::bit_cast<int64_t>(tag_to_double("silu_scale", tags["silu_scale"]))});
    if (row.op == "hstu_attn_bwd") {
      Shape os = qs;
      os.back() = sat_add(dv, bad == "dout_shape" ? 1 : 0);
      p->inputs.push_back(data_input("dout", dt, os, seed(), scale));
    }

    // Output shapes from the op's shape functions (a refusal is the case's answer).
    const HstuAttnArgs a = args(*p, views(p->inputs));
    // The scalar arguments under their names in the op's table (`recops record`'s manifest).
    p->scalars = {{"max_seq_len_q", static_cast<double>(a.max_seq_len_q)},
                  {"max_seq_len_k", static_cast<double>(a.max_seq_len_k)},
                  {"target_group_size", static_cast<double>(a.target_group_size)},
                  {"window_left", static_cast<double>(a.window_left)},
                  {"window_right", static_cast<double>(a.window_right)},
                  {"mask_type", static_cast<double>(static_cast<int64_t>(a.mask_type))}};
    if (a.alpha) p->scalars["alpha"] = *a.alpha;
    if (a.silu_scale) p->scalars["silu_scale"] = *a.silu_scale;
    if (row.op == "hstu_attn_bwd") p->scalars["want_drab"] = a.rab.has_value() ? 1.0 : 0.0;
    if (row.op == "hstu_attn_fwd") {
      Shape out;
      p->shape_error = hstu_attn_fwd_shape(a, &out);
      if (!p->shape_error.ok()) return Status::Ok();
      p->outputs = {{"out", out, dt}};
    } else {
      Shape sq, sk, sv, sr;
      p->shape_error = hstu_attn_bwd_shape(a, &sq, &sk, &sv, &sr);
      if (!p->shape_error.ok()) return Status::Ok();
      p->outputs = {{"dq", sq, dt}, {"dk", sk, dt}, {"dv", sv, dt}};
      if (a.rab) p->outputs.push_back({"drab", sr, dt});
    }
    return Status::Ok();
  }

  // The op's arguments from a problem's inputs (any device) and scalars.
  static HstuAttnArgs args(const Problem& p, const std::vector<TensorView>& in) {
    HstuAttnArgs a;
    auto get = [&](const std::string& name) -> std::optional<TensorView> {
      for (size_t i = 0; i < p.inputs.size(); ++i)
        if (p.inputs[i].name == name) return in[i];
      return std::nullopt;
    };
    a.q = *get("q");
    a.k = *get("k");
    a.v = *get("v");
    a.seq_offsets_q = get("seq_offsets_q");
    a.seq_offsets_k = get("seq_offsets_k");
    a.max_seq_len_q = size_of(p, "Sq");
    a.max_seq_len_k = size_of(p, "Sk");
    a.num_contexts = get("num_contexts");
    a.num_targets = get("num_targets");
    a.target_group_size = size_of(p, "group", 1);
    a.window_left = size_of(p, "window_left", -1);
    a.window_right = size_of(p, "window_right", 0);
    a.mask_type = static_cast<HstuMaskType>(size_of(p, "mask_type", 0));
    a.mask = get("mask");
    a.func = get("func");
    a.rab = get("rab");
    for (const auto& [k, v] : p.sizes) {
      if (k == "alpha_bits") a.alpha = std::bit_cast<double>(v);
      if (k == "silu_scale_bits") a.silu_scale = std::bit_cast<double>(v);
    }
    a.attn_scale = get("attn_scale");
    a.kv_cache = get("kv_cache");
    a.page_offsets = get("page_offsets");
    a.page_ids = get("page_ids");
    a.last_page_len = get("last_page_len");
    return a;
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const HstuAttnArgs a = args(p, in);
    if (p.op == "hstu_attn_fwd") return hstu_attn_fwd(a, out[0], ctx);
    const TensorView* drab = out.size() > 3 ? &out[3] : nullptr;
    return hstu_attn_bwd(in.back(), a, out[0], out[1], out[2], drab, ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto in = views(p.inputs);
    const auto o = views(*out);
    const HstuAttnArgs a = args(p, in);
    if (p.op == "hstu_attn_fwd") return hstu_attn_fwd_plain(a, o[0]);
    return hstu_attn_bwd_plain(in.back(), a, o[0], o[1], o[2], o.size() > 3 ? &o[3] : nullptr);
  }

  // Spec §6: forward = 2·(d + dv)·Σ valid score entries over heads; backward = 2.5× that. The
  // valid entries are counted from the op's own mask (hstu_attn_mask), head 0 standing for every
  // head unless a custom mask or func differs per head.
  double flops(const Problem& p) const override {
    if (!p.shape_error.ok()) return -1;
    const HstuAttnArgs a = args(p, views(p.inputs));
    const int64_t B = size_of(p, "B"), Hq = size_of(p, "Hq"), Sq = size_of(p, "Sq"),
                  Sk = size_of(p, "Sk");
    const bool per_head = (a.mask && a.mask->sizes[1] > 1) || (a.func && a.func->sizes[0] > 1);
    Tensor m = Tensor::empty({Sq, Sk}, DType::boolean);
    double valid = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < (per_head ? Hq : 1); ++h) {
        if (!hstu_attn_mask(a, b, h, m).ok()) return -1;
        const auto* mp = static_cast<const uint8_t*>(m.data());
        int64_t n = 0;
        for (int64_t i = 0; i < Sq * Sk; ++i) n += mp[i];
        valid += static_cast<double>(n) * (per_head ? 1 : static_cast<double>(Hq));
      }
    const double fwd = 2.0 * static_cast<double>(size_of(p, "d") + size_of(p, "dv")) * valid;
    return p.op == "hstu_attn_fwd" ? fwd : 2.5 * fwd;
  }

  double bytes(const Problem& p) const override { return io_bytes(p); }
};

}  // namespace

RECOPS_REGISTER_DRIVER(HstuAttn);

}  // namespace recops::cli
