// stem_indexer and stem_indexer_metadata: the entries. All validation happens here, once (spec
// §10); then the ordered implementation list runs the first implementation that accepts.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/stem/indexer/impls.h"
#include "ops/stem/common/stem_common.h"
#include "recops/sparse_attn.h"

namespace recops::ops {
namespace {
const std::string kOp = "stem_indexer";
const std::string kMetaOp = "stem_indexer_metadata";
using P = StemIndexerParams;

const std::vector<core::Impl<P>>& impls() {
  using stem::cuda_can_implement;
  static const std::vector<core::Impl<P>> list = stem::with_cpu_impls<P>(
      {
#ifdef RECOPS_WITH_CUDA
          {"cuda_sm90", DeviceType::cuda, core::cuda::any_device_reason,
           cuda_can_implement<90, P, stem_indexer_cuda_sm90_reason>, stem_indexer_cuda_sm90},
          {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason,
           cuda_can_implement<80, P, stem_indexer_cuda_reason>, stem_indexer_cuda,
           stem_indexer_cuda_candidates},
#endif
      },
      stem_indexer_cpu, stem_indexer_reference);
  return list;
}

constexpr int64_t kMaxBatch = 65536;
constexpr int32_t kMagic = 0x4D455453;  // "STEM"

// `no_heads`: Nq = Nk = 0 is accepted (stem_indexer: empty outputs; a plan needs heads).
Status check_common_scalars(const std::string& op, int64_t B, int64_t Nq, int64_t Nk,
                            bool no_heads) {
  RECOPS_CHECK(no_heads ? stem::heads_ok(Nq, Nk) : (Nk > 0 && Nq > 0 && Nq % Nk == 0), "recops.",
               op,
               ": the query heads must be a positive multiple of the KV heads (Nq % Nk == 0, "
               "Nk >= 1",
               no_heads ? "; or both 0" : "", "); got Nq=", Nq, ", Nk=", Nk,
               " (q_heads and kv_heads, or q's and k's head dims)");
  RECOPS_CHECK(B >= 1 && B <= kMaxBatch, "recops.", op, ": batch size B=", B,
               " must lie in [1, 65536]");
  return Status::Ok();
}

Status check_lengths_meta(const std::string& op, const char* arg, const TensorView& t, int64_t B) {
  using namespace stem;
  RECOPS_RETURN_IF_ERROR(check_dtype(op, arg, t, DType::int32, "int32"));
  RECOPS_RETURN_IF_ERROR(check_rank(op, arg, t, 1, "[B]"));
  if (B >= 0)
    RECOPS_CHECK(t.sizes[0] == B, "recops.", op, ": ", arg, " has shape ", shape_str(t.shape()),
                 " but qflat has batch size B=", B, " (shapes disagree on B)");
  return Status::Ok();
}

// The §5 plan word `w` of a metadata tensor, or an error naming the field.
Status check_word(const std::vector<int32_t>& m, size_t w, int64_t want, const char* field) {
  RECOPS_CHECK(m[w] == want, "recops.", kOp, ": metadata is inconsistent with this call: ", field,
               " (word ", w, ") is ", m[w], ", expected ", want,
               " (rebuild it with stem_indexer_metadata for these lengths and heads)");
  return Status::Ok();
}

}  // namespace

// Σ_{i<Qb} visible_blocks(r, b, i) in closed form: with stem_block_size 1 and int32 lengths,
// Qb reaches 2^31 and the loop took seconds. Causal rows see max(0, Kb − Qb + 1 + i) <= Kb
// blocks; the sum of that arithmetic series is below 2^63 for Qb, Kb < 2^31.
static int64_t visible_blocks_sum(const stem::StemRules& r, const stem::BatchRules& b) {
  if (b.Qb <= 0) return 0;
  if (!r.causal || b.decode) return b.Qb * b.Kb;
  const int64_t a = b.Kb - b.Qb + 1;     // blocks seen by row 0 (before the clamp at 0)
  const int64_t first = a < 0 ? -a : 0;  // the first row that sees any
  const int64_t n = b.Qb - first;        // rows that see some
  if (n <= 0) return 0;
  const int64_t lo = a + first, hi = b.Kb;  // their counts run lo, lo + 1, ..., hi
  return (lo + hi) * n / 2;
}

std::vector<int32_t> stem_metadata_words(const StemIndexerMetadataParams& p) {
  const int64_t S = p.B * p.Nk, G = p.Nk > 0 ? std::max<int64_t>(1, p.Nq / p.Nk) : 1;
  const int64_t Tq = std::max<int64_t>(1, 128 / G);
  std::vector<int32_t> m(static_cast<size_t>(2 * S + 17), 0);
  m[0] = kMagic;
  m[1] = 1;
  m[2] = static_cast<int32_t>(p.B);
  m[3] = static_cast<int32_t>(p.Nq);
  m[4] = static_cast<int32_t>(p.Nk);
  m[5] = p.causal ? 1 : 0;
  m[6] = static_cast<int32_t>(p.Bs);
  m[7] = static_cast<int32_t>(p.Df);
  m[8] = static_cast<int32_t>(p.window_size);
  m[9] = static_cast<int32_t>(S);
  m[10] = static_cast<int32_t>(Tq);
  uint32_t h = 0x811c9dc5u;  // FNV-1a-32 over the little-endian bytes of both length vectors
  for (const auto* v : {&p.q_raw, &p.kv_raw})
    for (int32_t x : *v)
      for (int k = 0; k < 4; ++k) {
        h ^= (static_cast<uint32_t>(x) >> (8 * k)) & 0xffu;
        h *= 0x01000193u;
      }
  m[12] = static_cast<int32_t>(h);
  stem::StemRules r;
  r.causal = p.causal;
  r.Bs = p.Bs;
  std::vector<int64_t> cost(static_cast<size_t>(S), 0), qb(static_cast<size_t>(S), 0);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t Qb = stem::ceil_div(p.Lq[b], p.Bs);
    const int64_t c = visible_blocks_sum(r, stem::batch_rules(r, p.Lq[b], p.Lk[b], p.Lk[b]));
    for (int64_t hk = 0; hk < p.Nk; ++hk) {
      cost[b * p.Nk + hk] = c;
      qb[b * p.Nk + hk] = Qb;
    }
  }
  std::vector<int64_t> order(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) order[s] = s;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return cost[a] > cost[b]; });
  int64_t off = 0;
  m[16 + S] = 0;
  for (int64_t r2 = 0; r2 < S; ++r2) {
    m[16 + r2] = static_cast<int32_t>(order[r2]);
    off += stem::ceil_div(qb[order[r2]], Tq);
    m[16 + S + r2 + 1] = static_cast<int32_t>(off);
  }
  m[11] = static_cast<int32_t>(off);
  return m;
}

std::vector<StemWorkItem> stem_work_items(const std::vector<int32_t>& plan, int64_t Nk,
                                          const std::vector<int64_t>& Lq, int64_t Bs) {
  std::vector<StemWorkItem> items;
  const int64_t S = plan[9], Tq = plan[10];
  for (int64_t r = 0; r < S; ++r) {
    const int64_t s = plan[16 + r], b = s / Nk, hk = s % Nk;
    const int64_t Qb = stem::ceil_div(Lq[b], Bs);
    const int64_t n = plan[16 + S + r + 1] - plan[16 + S + r];
    for (int64_t u = 0; u < n; ++u)
      items.push_back({b, hk, std::max<int64_t>(0, Qb - (u + 1) * Tq), Qb - u * Tq});
  }
  return items;
}

OpInfo stem_indexer_info() {
  return {kOp, "stem", core::describe_impls(impls())};
}
OpInfo stem_indexer_metadata_info() {
  // The plan is computed on the host for every backend (bit-identical by construction).
  std::vector<ImplInfo> v;
  v.push_back({"host", DeviceType::cpu, ""});
#ifdef RECOPS_WITH_CUDA
  v.push_back({"host", DeviceType::cuda, core::cuda::any_device_reason()});
#endif
  return {kMetaOp, "stem", v};
}

}  // namespace recops::ops

namespace recops {

Status stem_indexer_shape(const StemIndexerArgs& a, Shape* sparse_indices, Shape* sparse_seq_len) {
  using namespace ops::stem;
  const std::string& op = ops::kOp;
  // E1-E3: dtypes.
  RECOPS_RETURN_IF_ERROR(check_dtype(op, "qflat", a.qflat, DType::bf16, "bfloat16"));
  RECOPS_RETURN_IF_ERROR(check_dtype(op, "kflat", a.kflat, DType::bf16, "bfloat16"));
  RECOPS_RETURN_IF_ERROR(check_dtype(op, "vbias", a.vbias, DType::fp32, "float32"));
  // E4: ranks.
  RECOPS_RETURN_IF_ERROR(check_rank(op, "qflat", a.qflat, 4, "[B, Nq, Qmax, Df]"));
  RECOPS_RETURN_IF_ERROR(check_rank(op, "kflat", a.kflat, 4, "[B, Nk, Kmax, Df]"));
  RECOPS_RETURN_IF_ERROR(check_rank(op, "vbias", a.vbias, 3, "[B, Nk, Kmax]"));
  const int64_t B = a.qflat.sizes[0], Nq = a.qflat.sizes[1], Qmax = a.qflat.sizes[2],
                Df = a.qflat.sizes[3];
  const int64_t Nk = a.kflat.sizes[1], Kmax = a.kflat.sizes[2];
  // E5: shapes agree.
  RECOPS_CHECK(a.kflat.sizes[0] == B && a.kflat.sizes[3] == Df, "recops.", op, ": qflat ",
               shape_str(a.qflat.shape()), " and kflat ", shape_str(a.kflat.shape()),
               " must agree on B and Df");
  RECOPS_CHECK(a.vbias.sizes[0] == B && a.vbias.sizes[1] == Nk && a.vbias.sizes[2] == Kmax,
               "recops.", op, ": vbias has shape ", shape_str(a.vbias.shape()),
               ", expected [B, Nk, Kmax] = ", shape_str({B, Nk, Kmax}), " from kflat ",
               shape_str(a.kflat.shape()));
  RECOPS_RETURN_IF_ERROR(ops::check_lengths_meta(op, "q_seq_lens", a.q_seq_lens, B));
  RECOPS_RETURN_IF_ERROR(ops::check_lengths_meta(op, "kv_seq_lens", a.kv_seq_lens, B));
  if (a.num_prompt_tokens)
    RECOPS_RETURN_IF_ERROR(
        ops::check_lengths_meta(op, "num_prompt_tokens", *a.num_prompt_tokens, B));
  if (a.metadata) {
    RECOPS_RETURN_IF_ERROR(check_dtype(op, "metadata", *a.metadata, DType::int32, "int32"));
    RECOPS_RETURN_IF_ERROR(check_rank(op, "metadata", *a.metadata, 1, "[2·B·Nk + 17]"));
  }
  // E6, E7.
  RECOPS_RETURN_IF_ERROR(ops::check_common_scalars(op, B, Nq, Nk, true));
  // E8.
  const int64_t Bs = a.stem_block_size, Ts = a.stem_stride;
  RECOPS_CHECK(Bs > 0 && Ts > 0 && Bs % Ts == 0 && Df % Ts == 0, "recops.", op,
               ": need stem_block_size > 0, stem_stride > 0, stem_block_size % stem_stride == 0 "
               "and Df % stem_stride == 0; got stem_block_size=",
               Bs, ", stem_stride=", Ts, ", Df=", Df);
  // The plan stores stem_block_size as int32 (§5), and R = Bs/Ts enters the scores as R².
  RECOPS_RETURN_IF_ERROR(check_fits_int32(op, "stem_block_size", Bs));
  // E9-E12.
  RECOPS_CHECK(a.initial_blocks >= 0, "recops.", op, ": initial_blocks=", a.initial_blocks,
               " must be >= 0");
  RECOPS_CHECK(a.window_size >= 0, "recops.", op, ": window_size=", a.window_size, " must be >= 0");
  RECOPS_CHECK(std::isfinite(a.alpha) && a.alpha > 0 && a.alpha <= 1, "recops.", op,
               ": alpha=", a.alpha, " must be finite and in (0, 1]");
  for (auto [name, v] : {std::pair{"k_block_num_rate_medium", a.k_block_num_rate_medium},
                         std::pair{"k_block_num_rate_large", a.k_block_num_rate_large}})
    RECOPS_CHECK(std::isfinite(v) && v >= 0 && v <= 1, "recops.", op, ": ", name, "=", v,
                 " must be finite and in [0, 1]");
  for (auto [name, v] : {std::pair{"k_block_num_bias_medium", a.k_block_num_bias_medium},
                         std::pair{"k_block_num_bias_large", a.k_block_num_bias_large}})
    RECOPS_CHECK(v >= 0 && v <= (int64_t{1} << 20), "recops.", op, ": ", name, "=", v,
                 " must lie in [0, 2^20]");
  RECOPS_CHECK(a.topk_score_precision == 1 || a.topk_score_precision == 2, "recops.", op,
               ": topk_score_precision=", a.topk_score_precision, " must be 1 or 2");
  // E17.
  RECOPS_RETURN_IF_ERROR(check_device(op, "qflat", a.qflat, "kflat", a.kflat));
  RECOPS_RETURN_IF_ERROR(check_device(op, "qflat", a.qflat, "vbias", a.vbias));
  RECOPS_RETURN_IF_ERROR(check_device(op, "qflat", a.qflat, "q_seq_lens", a.q_seq_lens));
  RECOPS_RETURN_IF_ERROR(check_device(op, "qflat", a.qflat, "kv_seq_lens", a.kv_seq_lens));
  if (a.num_prompt_tokens)
    RECOPS_RETURN_IF_ERROR(
        check_device(op, "qflat", a.qflat, "num_prompt_tokens", *a.num_prompt_tokens));
  if (a.metadata) {
    RECOPS_RETURN_IF_ERROR(check_device(op, "qflat", a.qflat, "metadata", *a.metadata));
    const int64_t want = 2 * B * Nk + 17;
    RECOPS_CHECK(a.metadata->sizes[0] == want, "recops.", op,
                 ": metadata is inconsistent with this call: numel is ", a.metadata->sizes[0],
                 ", expected 2·B·Nk + 17 = ", want);
  }
  *sparse_indices = {B, Nq, Qmax, Kmax};
  *sparse_seq_len = {B, Nq, Qmax};
  return Status::Ok();
}

Status stem_indexer(const StemIndexerArgs& a, const TensorView& sparse_indices,
                    const TensorView& sparse_seq_len, const Context& ctx) {
  using namespace ops::stem;
  const std::string& op = ops::kOp;
  Shape si, sl;
  RECOPS_RETURN_IF_ERROR(stem_indexer_shape(a, &si, &sl));
  RECOPS_RETURN_IF_ERROR(check_output(op, "sparse_indices", sparse_indices, DType::int32, si));
  RECOPS_RETURN_IF_ERROR(check_output(op, "sparse_seq_len", sparse_seq_len, DType::int32, sl));
  RECOPS_RETURN_IF_ERROR(check_device(op, "qflat", a.qflat, "sparse_indices", sparse_indices));
  RECOPS_RETURN_IF_ERROR(check_device(op, "qflat", a.qflat, "sparse_seq_len", sparse_seq_len));
  RECOPS_CHECK(a.qflat.strides[3] == 1 || a.qflat.sizes[3] <= 1, "recops.", op,
               ": qflat's last stride must be 1 (the binding copies other layouts)");
  RECOPS_CHECK(a.kflat.strides[3] == 1 || a.kflat.sizes[3] <= 1, "recops.", op,
               ": kflat's last stride must be 1 (the binding copies other layouts)");

  ops::StemIndexerParams p;
  p.B = si[0];
  p.Nq = si[1];
  p.Qmax = si[2];
  p.Kmax = si[3];
  p.Nk = a.kflat.sizes[1];
  p.G = p.Nk > 0 ? p.Nq / p.Nk : 0;  // no heads: empty outputs, nothing runs
  p.Df = a.qflat.sizes[3];
  p.R = a.stem_block_size / a.stem_stride;
  p.precision = static_cast<int>(a.topk_score_precision);
  p.rules.causal = a.causal;
  p.rules.Bs = a.stem_block_size;
  p.rules.initial_blocks = a.initial_blocks;
  p.rules.window_size = a.window_size;
  p.rules.alpha = static_cast<float>(a.alpha);
  p.rules.rate_medium = static_cast<float>(a.k_block_num_rate_medium);
  p.rules.rate_large = static_cast<float>(a.k_block_num_rate_large);
  p.rules.bias_medium = a.k_block_num_bias_medium;
  p.rules.bias_large = a.k_block_num_bias_large;
  p.qflat = static_cast<const uint16_t*>(a.qflat.data);
  p.kflat = static_cast<const uint16_t*>(a.kflat.data);
  p.vbias = static_cast<const float*>(a.vbias.data);
  for (int d = 0; d < 3; ++d) {
    p.q_stride[d] = a.qflat.strides[d];
    p.k_stride[d] = a.kflat.strides[d];
    p.v_stride[d] = a.vbias.strides[d];
  }
  p.q_lens = static_cast<const int32_t*>(a.q_seq_lens.data);
  p.q_lens_stride = a.q_seq_lens.strides[0];
  p.kv_lens = static_cast<const int32_t*>(a.kv_seq_lens.data);
  p.kv_lens_stride = a.kv_seq_lens.strides[0];
  if (a.num_prompt_tokens) {
    p.prompt_lens = static_cast<const int32_t*>(a.num_prompt_tokens->data);
    p.prompt_lens_stride = a.num_prompt_tokens->strides[0];
  }
  p.indices = static_cast<int32_t*>(sparse_indices.data);
  p.seq_len = static_cast<int32_t*>(sparse_seq_len.data);
  p.device_index = a.qflat.device.index;

  // Value checks (E13-E16): lengths and the plan, read on the host.
  if (value_checks_on(a.qflat, ctx)) {
    std::vector<int32_t> q_raw, kv_raw;
    RECOPS_RETURN_IF_ERROR(read_int32(a.q_seq_lens, &p.Lq, ctx, &q_raw));
    RECOPS_RETURN_IF_ERROR(read_int32(a.kv_seq_lens, &p.Lk, ctx, &kv_raw));
    if (a.num_prompt_tokens)
      RECOPS_RETURN_IF_ERROR(read_int32(*a.num_prompt_tokens, &p.Lp, ctx));
    else
      p.Lp = p.Lk;
    const int64_t Bs = a.stem_block_size;
    for (int64_t b = 0; b < p.B; ++b) {
      RECOPS_CHECK(p.Lq[b] >= 0, "recops.", op, ": q_seq_lens[", b, "]=", p.Lq[b], " must be >= 0");
      RECOPS_CHECK(p.Lk[b] >= 0, "recops.", op, ": kv_seq_lens[", b, "]=", p.Lk[b],
                   " must be >= 0");
      RECOPS_CHECK(p.Lp[b] >= 0, "recops.", op, ": num_prompt_tokens[", b, "]=", p.Lp[b],
                   " must be >= 0");
      RECOPS_CHECK(p.Lq[b] <= mul_saturated(p.Qmax, Bs), "recops.", op, ": q_seq_lens[", b,
                   "]=", p.Lq[b], " exceeds the limit Qmax·stem_block_size = ", p.Qmax, "·", Bs);
      RECOPS_CHECK(p.Lk[b] <= mul_saturated(p.Kmax, Bs), "recops.", op, ": kv_seq_lens[", b,
                   "]=", p.Lk[b], " exceeds the limit Kmax·stem_block_size = ", p.Kmax, "·", Bs);
      RECOPS_CHECK(p.Lp[b] >= p.Lk[b], "recops.", op, ": num_prompt_tokens[", b, "]=", p.Lp[b],
                   " must be >= kv_seq_lens[", b, "]=", p.Lk[b]);
    }
    if (a.metadata) {
      std::vector<int64_t> m64;
      std::vector<int32_t> m;
      RECOPS_RETURN_IF_ERROR(read_int32(*a.metadata, &m64, ctx, &m));
      ops::StemIndexerMetadataParams mp;
      mp.Lq = p.Lq;
      mp.Lk = p.Lk;
      mp.q_raw = q_raw;
      mp.kv_raw = kv_raw;
      mp.B = p.B;
      mp.Nq = p.Nq;
      mp.Nk = p.Nk;
      mp.causal = a.causal;
      mp.Bs = a.stem_block_size;
      mp.Df = p.Df;
      mp.window_size = a.window_size;
      const std::vector<int32_t> want = ops::stem_metadata_words(mp);
      static const char* kFields[] = {
          "magic",  "version",         "B",          "q_heads",     "kv_heads",
          "causal", "stem_block_size", "dim_qkflat", "window_size", "sections",
          "Tq",     "work items",      "fingerprint"};
      for (size_t w = 0; w < 13; ++w)
        RECOPS_RETURN_IF_ERROR(ops::check_word(m, w, want[w], kFields[w]));
      for (size_t w = 13; w < want.size(); ++w)
        RECOPS_RETURN_IF_ERROR(ops::check_word(m, w, want[w], w < 16 ? "reserved" : "plan"));
      p.plan = std::move(m);
    }
  }
  if (sparse_seq_len.numel() == 0) return Status::Ok();
  return core::dispatch(op, ops::impls(), a.qflat.device.type, p, ctx);
}

Status stem_indexer_metadata_shape(const StemIndexerMetadataArgs& a, Shape* out) {
  using namespace ops::stem;
  const std::string& op = ops::kMetaOp;
  RECOPS_RETURN_IF_ERROR(ops::check_lengths_meta(op, "q_seq_lens", a.q_seq_lens, -1));
  RECOPS_RETURN_IF_ERROR(
      ops::check_lengths_meta(op, "kv_seq_lens", a.kv_seq_lens, a.q_seq_lens.sizes[0]));
  RECOPS_RETURN_IF_ERROR(
      check_device(op, "q_seq_lens", a.q_seq_lens, "kv_seq_lens", a.kv_seq_lens));
  const int64_t B = a.q_seq_lens.sizes[0];
  RECOPS_RETURN_IF_ERROR(ops::check_common_scalars(op, B, a.q_heads, a.kv_heads, false));
  RECOPS_CHECK(a.stem_block_size > 0, "recops.", op, ": stem_block_size=", a.stem_block_size,
               " must be > 0");
  RECOPS_CHECK(a.dim_qkflat > 0, "recops.", op, ": dim_qkflat=", a.dim_qkflat, " must be > 0");
  RECOPS_CHECK(a.window_size >= 0, "recops.", op, ": window_size=", a.window_size, " must be >= 0");
  // The plan stores these as int32 words (spec §5): refuse what would be narrowed.
  for (auto [name, v] :
       {std::pair{"q_heads", a.q_heads}, std::pair{"kv_heads", a.kv_heads},
        std::pair{"stem_block_size", a.stem_block_size}, std::pair{"dim_qkflat", a.dim_qkflat},
        std::pair{"window_size", a.window_size}})
    RECOPS_RETURN_IF_ERROR(check_fits_int32(op, name, v));
  const int64_t words = 2 * B * a.kv_heads + 17;  // B <= 2^16, kv_heads < 2^31: no overflow
  RECOPS_CHECK(words <= INT32_MAX, "recops.", op, ": the plan of 2·B·kv_heads + 17 = ", words,
               " words (B=", B, ", kv_heads=", a.kv_heads,
               ") does not fit int32 offsets; use fewer kv_heads or batches");
  *out = {words};
  return Status::Ok();
}

Status stem_indexer_metadata(const StemIndexerMetadataArgs& a, const TensorView& out,
                             const Context& ctx) {
  using namespace ops::stem;
  const std::string& op = ops::kMetaOp;
  Shape s;
  RECOPS_RETURN_IF_ERROR(stem_indexer_metadata_shape(a, &s));
  RECOPS_RETURN_IF_ERROR(check_output(op, "out", out, DType::int32, s));
  RECOPS_RETURN_IF_ERROR(check_device(op, "q_seq_lens", a.q_seq_lens, "out", out));
  ops::StemIndexerMetadataParams p;
  RECOPS_RETURN_IF_ERROR(read_int32(a.q_seq_lens, &p.Lq, ctx, &p.q_raw));
  RECOPS_RETURN_IF_ERROR(read_int32(a.kv_seq_lens, &p.Lk, ctx, &p.kv_raw));
  p.B = a.q_seq_lens.sizes[0];
  p.Nq = a.q_heads;
  p.Nk = a.kv_heads;
  p.causal = a.causal;
  p.Bs = a.stem_block_size;
  p.Df = a.dim_qkflat;
  p.window_size = a.window_size;
  for (int64_t b = 0; b < p.B; ++b) {
    RECOPS_CHECK(p.Lq[b] >= 0, "recops.", op, ": q_seq_lens[", b, "]=", p.Lq[b], " must be >= 0");
    RECOPS_CHECK(p.Lk[b] >= 0, "recops.", op, ": kv_seq_lens[", b, "]=", p.Lk[b], " must be >= 0");
  }
  const std::vector<int32_t> words = ops::stem_metadata_words(p);
  if (ctx.impl_used) *ctx.impl_used = "host";
  if (out.device.is_cpu()) {
    std::copy(words.begin(), words.end(), static_cast<int32_t*>(out.data));
    return Status::Ok();
  }
  return core::cuda::memcpy_any(out.data, words.data(), words.size() * 4);
}

}  // namespace recops

// ---- the argument tables (core/kit/op_def.h) ----
namespace recops::ops {
namespace {
Status indexer_shapes(const StemIndexerArgs& a, std::vector<kit::OutSpec>* outs) {
  // The layouts of the table's dense_from (the binding's copies; a Meta call gets none).
  StemIndexerArgs b = a;
  b.qflat = stem::inner_dense_layout(a.qflat);
  b.kflat = stem::inner_dense_layout(a.kflat);
  b.vbias = stem::inner_dense_layout(a.vbias);
  b.q_seq_lens = stem::inner_dense_layout(a.q_seq_lens);
  b.kv_seq_lens = stem::inner_dense_layout(a.kv_seq_lens);
  b.num_prompt_tokens = stem::inner_dense_layout(a.num_prompt_tokens);
  b.metadata = stem::dense_layout(a.metadata);
  Shape si, sl;
  RECOPS_RETURN_IF_ERROR(stem_indexer_shape(b, &si, &sl));
  outs->push_back({si, DType::int32});
  outs->push_back({sl, DType::int32});
  return Status::Ok();
}

Status indexer_run(const StemIndexerArgs& a, const kit::Outputs& o, const Context& ctx) {
  return stem_indexer(a, o.views[0], o.views[1], ctx);
}

Status metadata_shapes(const StemIndexerMetadataArgs& a, std::vector<kit::OutSpec>* outs) {
  StemIndexerMetadataArgs b = a;
  b.q_seq_lens = stem::inner_dense_layout(a.q_seq_lens);
  b.kv_seq_lens = stem::inner_dense_layout(a.kv_seq_lens);
  Shape s;
  RECOPS_RETURN_IF_ERROR(stem_indexer_metadata_shape(b, &s));
  outs->push_back({s, DType::int32});
  return Status::Ok();
}

Status metadata_run(const StemIndexerMetadataArgs& a, const kit::Outputs& o, const Context& ctx) {
  return stem_indexer_metadata(a, o.views[0], ctx);
}

constexpr const char* kIndexerDoc =
    R"(Block selection (spec §3.2). For each (batch, query head, query block ``i``): the visible
key blocks ``[0, V)`` (right-down causal by block counts), the forced sink ``[0, I)`` and
window ``[V-Wn, V)`` blocks, and the ``K̂`` best other blocks by
``S_j = <qflat_i, kflat_j>/R² + vbias_j`` (ties to the lower ``j``; ``K̂`` from the
position-decay budget of the prompt's block count ``P``, capped at 256).

Args:
    qflat: bf16 ``[B, Nq, Qmax, Df]``; kflat: bf16 ``[B, Nk, Kmax, Df]``;
        vbias: fp32 ``[B, Nk, Kmax]`` (``stem_prepare``'s outputs).
    q_seq_lens, kv_seq_lens: int32 ``[B]`` tokens; num_prompt_tokens: int32 ``[B]``
        (>= kv_seq_lens, default kv_seq_lens) picks the budget tier.
    metadata: the plan of ``stem_indexer_metadata`` (optional).
    topk_score_precision: 1 ranks fp32 scores, 2 ranks their bf16 rounding.
Returns:
    ``sparse_indices`` int32 ``[B, Nq, Qmax, Kmax]`` (the row's ``L`` ids in any order, then
    -1) and ``sparse_seq_len`` int32 ``[B, Nq, Qmax]`` (``L``; 0 for empty rows).
)";

constexpr const char* kMetadataDoc =
    R"(The optional load-balancing plan of ``stem_indexer`` (spec §5): int32
``[2·B·kv_heads + 17]``. Results are identical with and without it; a plan made for other
lengths, heads or attributes raises ``ValueError`` in ``stem_indexer``.)";
}  // namespace
}  // namespace recops::ops

RECOPS_REGISTER_OPS(reg) {
  using recops::StemIndexerArgs;
  using recops::StemIndexerMetadataArgs;
  namespace ops = recops::ops;
  reg.add(ops::stem_indexer_metadata_info());
  reg.add(ops::stem_indexer_info());
  // Dense layouts (the binding copies others): the last dim of every tensor but metadata, which
  // is read whole (as the shape functions assume for a Meta call).
  constexpr int kInner = -2, kWhole = 0;
  reg.add(recops::kit::Def<StemIndexerMetadataArgs>("stem_indexer_metadata", "stem")
              .value_errors()  // stem_indexer.md §10: ValueError, TypeError for dtypes
              .forward_only()  // no gradient (stem_indexer.md)
              .arg<&StemIndexerMetadataArgs::q_seq_lens>("q_seq_lens", {.dense_from = kInner})
              .arg<&StemIndexerMetadataArgs::kv_seq_lens>("kv_seq_lens", {.dense_from = kInner})
              .arg<&StemIndexerMetadataArgs::q_heads>("q_heads")
              .arg<&StemIndexerMetadataArgs::kv_heads>("kv_heads")
              .arg<&StemIndexerMetadataArgs::causal>("causal", {.def = "True", .kw = true})
              .arg<&StemIndexerMetadataArgs::stem_block_size>("stem_block_size",
                                                              {.def = "128", .kw = true})
              .arg<&StemIndexerMetadataArgs::dim_qkflat>("dim_qkflat", {.def = "2048", .kw = true})
              .arg<&StemIndexerMetadataArgs::window_size>("window_size", {.def = "4", .kw = true})
              .out("out", false)
              .shapes(ops::metadata_shapes)
              .run(ops::metadata_run)
              .doc("", ops::kMetadataDoc));
  reg.add(recops::kit::Def<StemIndexerArgs>("stem_indexer", "stem")
              .value_errors()  // stem_indexer.md §10: ValueError, TypeError for dtypes
              .forward_only()  // no gradient (stem_indexer.md)
              .arg<&StemIndexerArgs::qflat>("qflat", {.dense_from = kInner})
              .arg<&StemIndexerArgs::kflat>("kflat", {.dense_from = kInner})
              .arg<&StemIndexerArgs::vbias>("vbias", {.dense_from = kInner})
              .arg<&StemIndexerArgs::q_seq_lens>("q_seq_lens", {.dense_from = kInner})
              .arg<&StemIndexerArgs::kv_seq_lens>("kv_seq_lens", {.dense_from = kInner})
              .arg<&StemIndexerArgs::num_prompt_tokens>(
                  "num_prompt_tokens", {.def = "None", .kw = true, .dense_from = kInner})
              .arg<&StemIndexerArgs::metadata>("metadata",
                                               {.def = "None", .kw = true, .dense_from = kWhole})
              .arg<&StemIndexerArgs::causal>("causal", {.def = "True", .kw = true})
              .arg<&StemIndexerArgs::stem_block_size>("stem_block_size", {.def = "128", .kw = true})
              .arg<&StemIndexerArgs::stem_stride>("stem_stride", {.def = "16", .kw = true})
              .arg<&StemIndexerArgs::alpha>("alpha", {.def = "1.0", .kw = true})
              .arg<&StemIndexerArgs::initial_blocks>("initial_blocks", {.def = "4", .kw = true})
              .arg<&StemIndexerArgs::window_size>("window_size", {.def = "4", .kw = true})
              .arg<&StemIndexerArgs::k_block_num_rate_medium>("k_block_num_rate_medium",
                                                              {.def = "0.2", .kw = true})
              .arg<&StemIndexerArgs::k_block_num_bias_medium>("k_block_num_bias_medium",
                                                              {.def = "30", .kw = true})
              .arg<&StemIndexerArgs::k_block_num_rate_large>("k_block_num_rate_large",
                                                             {.def = "0.1", .kw = true})
              .arg<&StemIndexerArgs::k_block_num_bias_large>("k_block_num_bias_large",
                                                             {.def = "30", .kw = true})
              .arg<&StemIndexerArgs::topk_score_precision>("topk_score_precision",
                                                           {.def = "1", .kw = true})
              .out("sparse_indices", false)
              .out("sparse_seq_len", false)
              .shapes(ops::indexer_shapes)
              .run(ops::indexer_run)
              .doc("", ops::kIndexerDoc));
}
