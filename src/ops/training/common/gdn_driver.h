// training/common/gdn_driver.h: what the GDN sub-ops' CLI drivers share beyond case_args.h: their
// base class (the spec and the start of make()), the state's chunk count NT of a case, the gate
// input (the log decays −|x|·gate_scale and their chunk-local cumsum G, by recops' own
// chunk_local_cumsum or summed here in fp64), the L2-normalized key rows, β's sigmoid and a named
// size of a problem.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ops/training/chunk_local_cumsum/chunk_local_cumsum.h"
#include "ops/training/common/case_args.h"
#include "tools/recops/inputs.h"

namespace recops::cli::training_args {

// G's unit: 1 (natural log) or 1/ln 2 (log2 units, gate_log2).
inline double gate_unit(bool log2) {
  return log2 ? 1.0 / std::log(2.0) : 1.0;
}

// h's NT: ceil(T / bt) per batch row, or packed, the chunk count of the sequences (bt <= 0: 0).
inline int64_t chunk_count(const std::vector<int64_t>& offsets, bool packed, int64_t T,
                           int64_t bt) {
  if (bt <= 0) return 0;
  if (!packed) return (T + bt - 1) / bt;
  int64_t nt = 0;
  for (size_t n = 0; n + 1 < offsets.size(); ++n)
    nt += (std::max<int64_t>(0, offsets[n + 1] - offsets[n]) + bt - 1) / bt;
  return nt;
}

// fp32 g in place: x → −|x|·gate_scale (the product in fp64, rounded once).
inline void gate_decays(TensorView* g, double gate_scale) {
  float* d = static_cast<float*>(g->data);
  for (int64_t i = 0; i < g->numel(); ++i)
    d[i] = static_cast<float>(-std::fabs(static_cast<double>(d[i])) * gate_scale);
}

// fp32 g in place → its chunk-local cumsum times `unit` by recops' chunk_local_cumsum (chunks of
// bt restarting at each sequence start of `offs`); where that op refuses the case (the refusal
// cases' bad offsets or chunk sizes) g stays as it is and the result is false.
inline bool chunk_cumsum(TensorView* g, const TensorView* offs, int64_t bt, double unit) {
  ChunkLocalCumsumArgs a;
  a.g = *g;
  a.chunk_size = bt;
  a.scale = unit;
  if (offs) a.seq_offsets = *offs;
  Tensor G = Tensor::empty(g->shape(), DType::fp32);
  if (!chunk_local_cumsum(a, G.view()).ok()) return false;
  std::memcpy(g->data, G.data(), static_cast<size_t>(g->numel()) * sizeof(float));
  return true;
}

// fp32 g [B, T, HV] in place → the chunk-local cumsum of −|x|·gate_scale·unit, summed in fp64 here
// (chunks of bt, bt <= 0 read as 1, restarting at each sequence start), stored fp32.
inline void gate_cumsum_fp64(TensorView* g, const std::vector<int64_t>& offsets, bool packed,
                             int64_t bt, double gate_scale, double unit) {
  float* d = static_cast<float*>(g->data);
  const int64_t B = g->sizes[0], T = g->sizes[1], HV = g->sizes[2];
  const int64_t step = bt > 0 ? bt : 1;
  for_each_sequence(offsets, packed, B, T, [&](int64_t row0, int64_t len) {
    for (int64_t hv = 0; hv < HV; ++hv) {
      double run = 0;
      for (int64_t t = 0; t < len; ++t) {
        if (t % step == 0) run = 0;
        float& x = d[(row0 + t) * HV + hv];
        run += -std::fabs(static_cast<double>(x)) * gate_scale * unit;
        x = static_cast<float>(run);
      }
    }
  });
}

// Every row of a 4-D floating tensor's last dim scaled to unit L2 norm (fp64 sums); other ranks
// are left as they are.
inline void normalize_rows(TensorView* v) {
  if (v->ndim != 4) return;
  const int64_t K = v->sizes[3], rows = K ? v->numel() / K : 0;
  visit_floating(v->dtype, [&](auto t) {
    using X = decltype(t);
    X* d = static_cast<X*>(v->data);
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < K; ++c) ss += to_double(d[r * K + c]) * to_double(d[r * K + c]);
      const double inv = 1.0 / std::sqrt(std::max(ss, 1e-30));
      for (int64_t c = 0; c < K; ++c) d[r * K + c] = from_double<X>(to_double(d[r * K + c]) * inv);
    }
  });
}

// x ← sigmoid(x) elementwise (in fp64, rounded to x's dtype): fla's β conditioning.
inline void sigmoid(TensorView* x) {
  visit_floating(x->dtype, [&](auto tag) {
    using X = decltype(tag);
    X* d = static_cast<X*>(x->data);
    for (int64_t i = 0; i < x->numel(); ++i)
      d[i] = from_double<X>(1.0 / (1.0 + std::exp(-to_double(d[i]))));
  });
}

// The size called `name` in p.sizes (0 when absent), for the FLOP counts.
inline double size_named(const Problem& p, const char* name) {
  for (const auto& [n, v] : p.sizes)
    if (n == name) return static_cast<double>(v);
  return 0.0;
}

// The base of a GDN sub-op's driver: fields shape, lengths | offsets, offsets_dtype (and `scale`
// with scale_field), bf16 by default, the args every one reads (chunk_size, gva, gates,
// gate_scale, gate_log2, T) and the op's `extra` ones.
class GdnDriver : public FixedDriver {
 public:
  GdnDriver(const char* op, std::map<std::string, ArgKind> extra, bool scale_field = false)
      : FixedDriver(spec(op, std::move(extra), scale_field)) {}

 protected:
  // The anchor's [B, T, H, K] (T from the offsets when packed) and the args every make() reads.
  struct Case {
    Shape shape;
    bool packed = false;
    Input off;  // the offsets input when packed
    int64_t B = 0, T = 0, H = 0, K = 0, HV = 0, bt = 0;
    bool gates = true, log2 = false;
  };

  // The start of make(): begin_make, the anchor's shape (`anchor`: "q" or "k"), the packed time
  // axis (packed_time) and gva, chunk_size (default 64), gates (default true), gate_log2.
  Status begin_case(const CaseRow& row, Problem* p, const char* anchor, Case* c) const {
    const CaseSpec& cs = *row.spec;
    const std::string what = std::string(anchor) + "'s [B, T, H, K]";
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, what.c_str()));
    c->shape = *cs.shape;
    if (c->shape.size() != 4) return case_error(row, "shape must be " + what);
    RECOPS_RETURN_IF_ERROR(packed_time(row, p, &c->shape, &c->off, &c->packed));
    c->B = c->shape[0], c->T = c->shape[1], c->H = c->shape[2], c->K = c->shape[3];
    c->HV = c->H * static_cast<int64_t>(number(cs, "gva", 1));
    c->bt = static_cast<int64_t>(number(cs, "chunk_size", 64));
    c->gates = flag(cs, "gates", true), c->log2 = flag(cs, "gate_log2", false);
    return Status::Ok();
  }

 private:
  static Spec spec(const char* op, std::map<std::string, ArgKind> args, bool scale_field) {
    args.insert({{"chunk_size", ArgKind::integer},
                 {"gva", ArgKind::integer},
                 {"gates", ArgKind::boolean},
                 {"gate_scale", ArgKind::number},
                 {"gate_log2", ArgKind::boolean},
                 {"T", ArgKind::integer}});
    Spec s{.ops = {op},
           .folder = std::string("training/") + op,
           .fields = {"shape", "lengths", "offsets", "offsets_dtype"},
           .dtype = DType::bf16,
           .args = std::move(args)};
    if (scale_field) s.fields.insert("scale");
    return s;
  }
};

}  // namespace recops::cli::training_args
