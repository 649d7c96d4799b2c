// src/ops/stem/common/driver_common.h: what the Stem family's CLI drivers share (spec:
// stem_indexer.md): the case tags, the sizes table's scalars, input look-up, the batch lengths and
// the K/V inputs of stem_prepare and block_sparse_attention. The drivers are in the op folders
// (prepare/, indexer/, block_sparse_attention/ driver.cpp).
//
// Case fields common to the family (the common case-file fields, read this way):
//   lengths: the q lengths (tokens) of the B batches; scale: of the random data
// Features are tags `name` or `name=value` (lists of numbers are ':'-separated):
//   kv=a:b:..          kv lengths (default: the q lengths + delta)
//   delta=N            Lk = Lq + N (history before the chunk)
//   paged=PS           paged K/V with page size PS (prepare, attention; see make_kv)
//   bad=WHAT           one deliberate spec §10 violation (see each driver's make and make_kv).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/recops/driver.h"

namespace recops::cli::stem {

// A case's tags: name -> value ("" for a bare `name`).
using Tags = std::map<std::string, std::string>;

Tags tags_of(const CaseSpec& cs);
bool has(const Tags& t, const std::string& k);
// The tag's value, or `d` when it is absent; a present tag needs a number (a bare `bs` or a `bs=`
// is an error, not the default).
int64_t tag_int(const Tags& t, const std::string& k, int64_t d);
// As tag_int, with the value >= lo (an error naming the tag, the value and the bound otherwise).
int64_t tag_int_at_least(const Tags& t, const std::string& k, int64_t d, int64_t lo);
// As tag_int; "nan" and "inf" are read as such.
double tag_double(const Tags& t, const std::string& k, double d);
// The value of a tag that takes one of `accepted` ("" when it is absent); any other value,
// none included, is an error naming the tag, the value and the accepted values.
std::string tag_choice(const Tags& t, const std::string& k,
                       std::initializer_list<std::string_view> accepted);
// Whether the bare tag `k` (e.g. `noncausal`) is there; `k=value` is an error.
bool tag_flag(const Tags& t, const std::string& k);
// A ':'-separated list of integers (empty when the tag is absent).
std::vector<int64_t> tag_list(const Tags& t, const std::string& k);

// Problem::sizes entries: integers as they are, reals bit-cast into the int64 slot.
int64_t size_of(const Problem& p, const std::string& key, int64_t dflt = 0);
double real_of(const Problem& p, const std::string& key, double dflt);
void put_real(Problem* p, const std::string& key, double v);

// The i-th value of a deterministic random stream in [0, 2^40).
uint64_t rand_u(uint64_t seed, uint64_t i);

// The view in `in` of the input named `name`, or nullptr.
const TensorView* find(const Problem& p, const std::vector<TensorView>& in,
                       const std::string& name);
std::optional<TensorView> opt(const TensorView* v);

// The lengths of a case: q from `lengths`, kv from kv= / delta=.
struct Lens {
  std::vector<int64_t> q, kv;
  int64_t B = 0;
};
Status make_lens(const CaseRow& row, const Tags& tags, Lens* L);
// a + b, saturated at the int64 limits: a case file's lengths and tags may be anything; a wrapped
// sum would size a tensor wrongly, a saturated one is refused when the tensor is allocated.
int64_t sat_add(int64_t a, int64_t b);
// max over v of ceil(x / bs).
int64_t max_blocks(const std::vector<int64_t>& v, int64_t bs);

// K/V inputs of prepare and attention: packed (with cu_seqlens_kv) or paged (page size PS >= 1,
// with a shuffled block table and spare pages). bad=dtype_mix|no_kv_layout (packed),
// bad=page_id|both_kv_layouts (paged; each is an error with the other layout). The caller checked
// bad= with tag_choice, its list holding these and make_qkv's.
Status make_kv(const CaseRow& row, const Tags& tags, const Lens& L, DType dt, int64_t Nk, int64_t D,
               int64_t Dv, uint64_t seed_k, uint64_t seed_v, double scale, Problem* p);

// What the family's drivers share as drivers: their ops, folder and tags (the tags a driver reads,
// docs/cases.md; any other is refused) as given, the case fields shape, lengths and scale, and
// bf16 as the default dtype.
class StemDriver : public FixedDriver {
 public:
  StemDriver(std::vector<std::string> ops, std::string folder, std::set<std::string> tags)
      : FixedDriver({.ops = std::move(ops),
                     .folder = std::move(folder),
                     .fields = {"shape", "lengths", "scale"},
                     .dtype = DType::bf16,
                     .tags = std::move(tags)}) {}
};

// The inputs of prepare and attention in their order: q [Tq, Nq, D] (Tq = the sum of the q
// lengths), K/V (make_kv), cu_seqlens_q and kv_seq_lens; tensor seeds from slot *slot on.
// bad=cu_not_monotone swaps cu_seqlens_q[1] and [2].
Status make_qkv(const CaseRow& row, const Tags& tags, const Lens& L, DType dt, int64_t Nq,
                int64_t Nk, int64_t D, int64_t Dv, uint64_t* slot, Problem* p);

// q, k, v and the index tensors of prepare's and attention's Args, found by name.
template <class Args>
void find_qkv(const Problem& p, const std::vector<TensorView>& in, Args* a) {
  a->q = *find(p, in, "q");
  a->k = *find(p, in, "k");
  a->v = *find(p, in, "v");
  a->cu_seqlens_q = *find(p, in, "cu_seqlens_q");
  a->kv_seq_lens = *find(p, in, "kv_seq_lens");
  a->cu_seqlens_kv = opt(find(p, in, "cu_seqlens_kv"));
  a->block_table = opt(find(p, in, "block_table"));
}

}  // namespace recops::cli::stem
