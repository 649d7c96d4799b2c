// training/common/ce_case.h: what the CLI drivers of the cross-entropy ops (fused_cross_entropy,
// chunk_loss) share: the case args every one of them reads, the scalars they turn into, the labels
// of a case and the scalars back into the ops' CeScalars.
//
// Case args: reduction (none, sum, mean; default mean; another name is passed on as -1, for the
// refusal case), ignore_index (default -100), label_smoothing, z_loss_scale, softcap (default 0),
// label_dtype (int32 or int64, default int64; read by the driver), ignore_every (k > 0: rows with
// i % k == 0 get ignore_index), labels (an explicit list). Labels are uniform in [0, V) with row 0
// at V - 1 and row 1 at 0.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/hash_rng.h"
#include "ops/training/common/case_args.h"
#include "ops/training/common/cross_entropy.h"
#include "tools/recops/driver.h"
#include "tools/recops/gen.h"

namespace recops::cli::ce_case {

// The args above and the op's own (`extra`).
inline std::map<std::string, ArgKind> args(std::map<std::string, ArgKind> extra) {
  extra.insert({{"reduction", ArgKind::text},
                {"ignore_index", ArgKind::integer},
                {"label_smoothing", ArgKind::number},
                {"z_loss_scale", ArgKind::number},
                {"softcap", ArgKind::number},
                {"label_dtype", ArgKind::text},
                {"ignore_every", ArgKind::integer},
                {"labels", ArgKind::int_list}});
  return extra;
}

inline const ArgValue* find(const CaseSpec& cs, const char* key) {
  const auto it = cs.args.find(key);
  return it == cs.args.end() ? nullptr : &it->second;
}

// The schema's value of `reduction`: 0 none, 1 sum, 2 mean (the default), -1 another name.
inline double reduction_of(const CaseSpec& cs) {
  const ArgValue* v = find(cs, "reduction");
  if (!v || v->s == "mean") return 2;
  if (v->s == "none") return 0;
  return v->s == "sum" ? 1 : -1;
}

inline int64_t ignore_index_of(const CaseSpec& cs) {
  const ArgValue* v = find(cs, "ignore_index");
  return v ? v->i : -100;
}

// The CeScalars of a case, as a Problem's scalars (the driver adds its own to the map).
inline std::map<std::string, double> scalars(const CaseSpec& cs) {
  return {{"ignore_index", static_cast<double>(ignore_index_of(cs))},
          {"label_smoothing", training_args::number(cs, "label_smoothing", 0)},
          {"z_loss_scale", training_args::number(cs, "z_loss_scale", 0)},
          {"softcap", training_args::number(cs, "softcap", 0)},
          {"reduction", reduction_of(cs)}};
}

// The labels of N rows over V classes: `labels` when the case lists them, else uniform in [0, V)
// (row 0: V - 1, row 1: 0), every `ignore_every`-th row (from row 0) ignore_index.
inline std::vector<int64_t> labels(const CaseSpec& cs, int64_t N, int64_t V) {
  if (const ArgValue* v = find(cs, "labels")) return v->list;
  const int64_t ignore_index = ignore_index_of(cs);
  const ArgValue* every = find(cs, "ignore_every");
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    int64_t y = V > 0 ? core::uniform_int(tensor_seed(cs.seed, 3), i, 0, V - 1) : 0;
    if (i == 0) y = V - 1;
    if (i == 1) y = 0;
    if (every && every->i > 0 && i % every->i == 0) y = ignore_index;
    out.push_back(y);
  }
  return out;
}

// A Problem's scalars (from scalars() above) back into an op's arguments.
inline void scalars_into(const Problem& p, CeScalars* s) {
  s->ignore_index = static_cast<int64_t>(p.scalars.at("ignore_index"));
  s->label_smoothing = p.scalars.at("label_smoothing");
  s->z_loss_scale = p.scalars.at("z_loss_scale");
  s->softcap = p.scalars.at("softcap");
  s->reduction = static_cast<CeReduction>(static_cast<int>(p.scalars.at("reduction")));
}

}  // namespace recops::cli::ce_case
