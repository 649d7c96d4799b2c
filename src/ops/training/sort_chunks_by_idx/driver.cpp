// training/sort_chunks_by_idx/driver.cpp: the `recops` CLI's driver of sort_chunks_by_idx and
// sort_chunks_by_idx_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (the data input's, [T, ...], required). args:
// C (integer, default 8: split sizes from C-1 random cuts of [0, T] and a random permutation),
// splits and sorted (integer lists, given explicitly instead), probs (boolean: with probs /
// grad_probs, fp32 [T]), split_dtype and idx_dtype (int32 or int64, default int64; another name
// is passed on, for the refusal cases).
#include <algorithm>
#include <utility>

#include "core/hash_rng.h"
#include "ops/training/sort_chunks_by_idx/sort_chunks_by_idx.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

const ArgValue* find(const CaseSpec& cs, const char* key) {
  const auto it = cs.args.find(key);
  return it == cs.args.end() ? nullptr : &it->second;
}

Status index_dtype(const CaseRow& row, const char* key, DType* t) {
  const ArgValue* v = find(*row.spec, key);
  if (!v) return (*t = DType::int64), Status::Ok();
  const auto d = dtype_from_name(v->s);
  if (!d) return case_error(row, std::string("args.") + key + ": unknown dtype " + v->s);
  *t = *d;
  return Status::Ok();
}

// Split sizes summing to T from C-1 sorted random cut points, and a random permutation.
void random_chunks(uint64_t seed, int64_t T, int64_t C, std::vector<int64_t>* splits,
                   std::vector<int64_t>* perm) {
  std::vector<int64_t> cuts;
  for (int64_t i = 0; i + 1 < C; ++i) cuts.push_back(core::uniform_int(seed, i, 0, T));
  std::sort(cuts.begin(), cuts.end());
  int64_t prev = 0;
  for (int64_t c : cuts) splits->push_back(c - prev), prev = c;
  if (C > 0) splits->push_back(T - prev);
  for (int64_t i = 0; i < C; ++i) perm->push_back(i);
  for (int64_t i = C - 1; i > 0; --i)
    std::swap((*perm)[i], (*perm)[core::uniform_int(seed + 1, i, 0, i)]);
}

class SortChunksByIdxDriver final : public FixedDriver {
 public:
  SortChunksByIdxDriver()
      : FixedDriver({.ops = {"sort_chunks_by_idx", "sort_chunks_by_idx_bwd"},
                     .folder = "training/sort_chunks_by_idx",
                     .fields = {"shape"},
                     .dtype = DType::bf16,
                     .args = {{"C", ArgKind::integer},
                              {"splits", ArgKind::int_list},
                              {"sorted", ArgKind::int_list},
                              {"probs", ArgKind::boolean},
                              {"split_dtype", ArgKind::text},
                              {"idx_dtype", ArgKind::text}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "the data input's, [T, ...]"));
    const bool bwd = row.op == "sort_chunks_by_idx_bwd";
    const Shape& shape = *cs.shape;
    const int64_t T = shape.empty() ? 0 : shape[0];
    const ArgValue* C = find(cs, "C");
    std::vector<int64_t> splits, perm;
    random_chunks(tensor_seed(cs.seed, 2), T, C ? C->i : 8, &splits, &perm);
    if (const ArgValue* v = find(cs, "splits")) splits = v->list;
    if (const ArgValue* v = find(cs, "sorted")) perm = v->list;
    DType sd, id;
    RECOPS_RETURN_IF_ERROR(index_dtype(row, "split_dtype", &sd));
    RECOPS_RETURN_IF_ERROR(index_dtype(row, "idx_dtype", &id));
    const ArgValue* probs = find(cs, "probs");
    const bool with_probs = probs && probs->b;
    p->inputs.clear();
    p->inputs.push_back(data_input(bwd ? "grad_output" : "input", p->dtype, shape, cs.seed, 1.0));
    p->inputs.push_back(int_input("split_sizes", sd, splits));
    p->inputs.push_back(int_input("sorted_idx", id, perm));
    if (with_probs)
      p->inputs.push_back(
          data_input(bwd ? "grad_probs" : "probs", DType::fp32, {T}, cs.seed + 1, 1.0));
    p->sizes = {{"T", T}, {"C", static_cast<int64_t>(splits.size())}};
    p->outputs = {{bwd ? "grad_input" : "output", shape, p->dtype}};
    if (with_probs)
      p->outputs.push_back({bwd ? "grad_probs_in" : "permuted_probs", {T}, DType::fp32});
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    std::optional<TensorView> probs;
    if (in.size() > 3) probs = in[3];
    const TensorView* out_probs = out.size() > 1 ? &out[1] : nullptr;
    if (p.op == "sort_chunks_by_idx")
      return sort_chunks_by_idx({in[0], in[1], in[2], probs}, out[0], out_probs, ctx);
    return sort_chunks_by_idx_bwd({in[0], in[1], in[2], probs}, out[0], out_probs, ctx);
  }

  size_t workspace_bytes(const Problem&, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    return sort_chunks_by_idx_workspace_bytes(in[0], in[1]);
  }

  // Every input read once and every output written once (rows, probs, the two [C] tensors).
  double bytes(const Problem& p) const override { return io_bytes(p); }
};

}  // namespace

RECOPS_REGISTER_DRIVER(SortChunksByIdxDriver);

}  // namespace recops::cli
