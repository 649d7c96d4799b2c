// src/ops/stem/block_sparse_attention/driver.cpp: the recops CLI's driver of
// block_sparse_attention (spec: stem_indexer.md). The Stem family's shared helpers are in
// ../common/driver_common.h.
//
// Case fields (the common case-file fields, read this way):
//   shape: [Nq, Nk, D]
//   lengths: the q lengths (tokens) of the B batches; scale: of the random data
// Features are tags `name` or `name=value` (lists of numbers are ':'-separated):
//   kv=a:b:..          kv lengths (default: the q lengths + delta)
//   delta=N            Lk = Lq + N (history before the chunk)
//   qmax=N, kmax=N     padded block dims Qmax / Kmax (default the batch maxima)
//   noncausal          causal = false
//   bs=N               sparse_block_size
//   paged=PS           paged K/V with page size PS
//   sel=all|rand|empty full visible selection permuted, random subsets, nothing (default rand)
//   softmax_scale=X
//   fa_rows=16|32      cuda_sm80_fa's query rows per warp at D = 128 (tune_config)
//   bad=WHAT           one deliberate spec §10 violation (see make, make_qkv and make_kv).
//
// Judging: by the case file's `double` standard against the plain baseline.
#include <algorithm>
#include <bit>
#include <cstdint>
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

class BlockSparseAttentionDriver final : public StemDriver {
 public:
  BlockSparseAttentionDriver()
      : StemDriver({"block_sparse_attention"}, "stem/block_sparse_attention",
                   {"bad", "bs", "delta", "fa_rows", "kmax", "kv", "noncausal", "paged", "qmax",
                    "sel", "softmax_scale"}) {}

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
    const bool causal = !tag_flag(tags, "noncausal");
    // Named values: an unknown one is an error naming the tag, not a silent default.
    const std::string bad = tag_choice(tags, "bad",
                                       {"dup_id", "oob_id", "cu_not_monotone", "dtype_mix",
                                        "no_kv_layout", "page_id", "both_kv_layouts"});
    const std::string sel = tag_choice(tags, "sel", {"all", "rand", "empty"});
    tag_choice(tags, "fa_rows", {"16", "32"});
    uint64_t slot = 1;
    RECOPS_RETURN_IF_ERROR(make_qkv(row, tags, L, p->dtype, Nq, Nk, D, D, &slot, p));
    // The selection: per row (b, hq, i), ids of [0, Kb) in a shuffled order. A block size <= 0
    // is the op's error to report; the selection is then made with blocks of one token (bs=0
    // divided by zero here). Its size is checked: qmax=2^62 wrapped the product.
    const int64_t gbs = Bs > 0 ? Bs : 1;
    const int64_t Qmax = tag_int_at_least(tags, "qmax", max_blocks(L.q, gbs), 0),
                  Kmax = tag_int_at_least(tags, "kmax", max_blocks(L.kv, gbs), 0);
    const int64_t nrows = TensorView::mul_sat(TensorView::mul_sat(B, Nq), Qmax);
    if (nrows > (int64_t{1} << 32) || TensorView::mul_sat(nrows, Kmax) > (int64_t{1} << 32))
      return case_error(row, "qmax=" + std::to_string(Qmax) + ", kmax=" + std::to_string(Kmax) +
                                 ": the selection [B, Nq, Qmax, Kmax] has more than 2^32 ids");
    std::vector<int64_t> ids(static_cast<size_t>(nrows * Kmax), -1),
        lens(static_cast<size_t>(nrows), 0);
    const uint64_t ss = tensor_seed(cs.seed, slot++);
    ops::stem::StemRules r;
    r.causal = causal;
    r.Bs = gbs;
    uint64_t n = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hq = 0; hq < Nq; ++hq)
        for (int64_t i = 0; i < std::min(Qmax, ops::stem::ceil_div(L.q[b], gbs)); ++i) {
          const int64_t row_id = (b * Nq + hq) * Qmax + i;
          const int64_t Kb = ops::stem::ceil_div(L.kv[b], gbs);
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
          // A row holds at most Kmax ids (kmax= below the batch's Kb wrote past the row).
          if (static_cast<int64_t>(pool.size()) > Kmax) pool.resize(static_cast<size_t>(Kmax));
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
    const BlockSparseAttentionArgs a = args(*p, views(p->inputs));
    // The scalar arguments under their names in the op's table (`recops record`'s manifest).
    p->scalars = {{"causal", a.causal ? 1.0 : 0.0},
                  {"sparse_block_size", static_cast<double>(a.sparse_block_size)}};
    if (a.softmax_scale) p->scalars["softmax_scale"] = *a.softmax_scale;
    Shape so, sl;
    p->shape_error = block_sparse_attention_shape(a, &so, &sl);
    if (!p->shape_error.ok()) return Status::Ok();
    p->outputs = {{"out", so, p->dtype}, {"lse", sl, DType::fp32}};
    return Status::Ok();
  }

  static BlockSparseAttentionArgs args(const Problem& p, const std::vector<TensorView>& in) {
    BlockSparseAttentionArgs a;
    find_qkv(p, in, &a);
    a.sparse_indices = *find(p, in, "sparse_indices");
    a.sparse_seq_len = *find(p, in, "sparse_seq_len");
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

RECOPS_REGISTER_DRIVER(BlockSparseAttentionDriver);

}  // namespace recops::cli::stem
