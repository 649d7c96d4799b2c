// src/ops/stem/common/driver_common.cpp: the Stem drivers' shared helpers (driver_common.h).
// Compiled into the recops CLI (its name starts with `driver`).
#include "ops/stem/common/driver_common.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>

#include "ops/stem/common/stem_rules.h"
#include "tools/recops/gen.h"
#include "tools/recops/tag_value.h"
#include "tools/recops/inputs.h"

namespace recops::cli::stem {

namespace {
// bad= as make_qkv and make_kv read it: the driver's make checked it first against its own list
// (tag_choice), which holds the values these two act on.
std::string checked_bad(const Tags& t) {
  auto it = t.find("bad");
  return it == t.end() ? "" : it->second;
}
}  // namespace

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
  return it == t.end() ? d : tag_to_int(k, it->second);
}
int64_t tag_int_at_least(const Tags& t, const std::string& k, int64_t d, int64_t lo) {
  auto it = t.find(k);
  return it == t.end() ? d : tag_to_int_at_least(k, it->second, lo);
}
double tag_double(const Tags& t, const std::string& k, double d) {
  auto it = t.find(k);
  return it == t.end() ? d : tag_to_double(k, it->second);
}
std::string tag_choice(const Tags& t, const std::string& k,
                       std::initializer_list<std::string_view> accepted) {
  auto it = t.find(k);
  return it == t.end() ? "" : tag_to_choice(k, it->second, accepted);
}
bool tag_flag(const Tags& t, const std::string& k) {
  auto it = t.find(k);
  if (it == t.end()) return false;
  tag_no_value(k, it->second);
  return true;
}
std::vector<int64_t> tag_list(const Tags& t, const std::string& k) {
  std::vector<int64_t> v;
  auto it = t.find(k);
  std::stringstream ss(it == t.end() ? "" : it->second);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) v.push_back(tag_to_int(k, item));
  return v;
}
int64_t size_of(const Problem& p, const std::string& key, int64_t dflt) {
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
    for (int64_t x : L->q) L->kv.push_back(std::max<int64_t>(0, sat_add(x, delta)));
  }
  return Status::Ok();
}
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
int64_t max_blocks(const std::vector<int64_t>& v, int64_t bs) {
  int64_t m = 0;
  for (int64_t x : v) m = std::max(m, ops::stem::ceil_div(x, bs));
  return m;
}

Status make_kv(const CaseRow& row, const Tags& tags, const Lens& L, DType dt, int64_t Nk, int64_t D,
               int64_t Dv, uint64_t seed_k, uint64_t seed_v, double scale, Problem* p) {
  const int64_t ps = tag_int_at_least(tags, "paged", 0, 1);
  const std::string bad = checked_bad(tags);
  // A layout's violation asked of the other layout would silently do nothing.
  if (ps == 0 && (bad == "page_id" || bad == "both_kv_layouts"))
    return case_error(row, "bad=" + bad + " needs paged K/V (paged=PS)");
  if (ps != 0 && (bad == "dtype_mix" || bad == "no_kv_layout"))
    return case_error(row, "bad=" + bad + " needs packed K/V (no paged=)");
  if (ps == 0) {
    std::vector<int64_t> cu = {0};
    for (int64_t x : L.kv) cu.push_back(sat_add(cu.back(), x));
    const DType kdt = bad == "dtype_mix" ? (dt == DType::bf16 ? DType::fp16 : DType::bf16) : dt;
    p->inputs.push_back(data_input("k", kdt, {cu.back(), Nk, D}, seed_k, scale));
    p->inputs.push_back(data_input("v", dt, {cu.back(), Nk, Dv}, seed_v, scale));
    if (bad != "no_kv_layout") p->inputs.push_back(int_input("cu_seqlens_kv", DType::int32, cu));
    return Status::Ok();
  }
  int64_t max_pages = 0, used = 0;
  for (int64_t x : L.kv) {
    max_pages = std::max(max_pages, ops::stem::ceil_div(x, ps));
    used = sat_add(used, ops::stem::ceil_div(x, ps));
  }
  // Page ids and the block table are int32 (and the permutation and the table below are host
  // vectors of those sizes): kv=2^62 with paged=1 overflowed `used` and sized them past int64.
  const int64_t width = std::max<int64_t>(max_pages, 1);
  if (used > INT32_MAX - 3 || TensorView::mul_sat(L.B, width) > INT32_MAX)
    return case_error(row, "paged=" + std::to_string(ps) + ": " + std::to_string(used) +
                               " pages, a block table of " + std::to_string(L.B) + " x " +
                               std::to_string(width) + ": more than int32 holds");
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

Status make_qkv(const CaseRow& row, const Tags& tags, const Lens& L, DType dt, int64_t Nq,
                int64_t Nk, int64_t D, int64_t Dv, uint64_t* slot, Problem* p) {
  const CaseSpec& cs = *row.spec;
  std::vector<int64_t> cu = {0};
  for (int64_t x : L.q) cu.push_back(sat_add(cu.back(), x));
  p->inputs.push_back(
      data_input("q", dt, {cu.back(), Nq, D}, tensor_seed(cs.seed, (*slot)++), cs.scale));
  const uint64_t sk = tensor_seed(cs.seed, (*slot)++), sv = tensor_seed(cs.seed, (*slot)++);
  RECOPS_RETURN_IF_ERROR(make_kv(row, tags, L, dt, Nk, D, Dv, sk, sv, cs.scale, p));
  if (checked_bad(tags) == "cu_not_monotone" && cu.size() > 2) std::swap(cu[1], cu[2]);
  p->inputs.push_back(int_input("cu_seqlens_q", DType::int32, cu));
  p->inputs.push_back(int_input("kv_seq_lens", DType::int32, L.kv));
  return Status::Ok();
}

}  // namespace recops::cli::stem
