// training/solve_tril/driver.cpp: the `recops` CLI's driver of solve_tril: builds a case's inputs,
// calls the public entry, gives the double standard's plain baseline, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (A's [B, T, HV, BT], required; with lengths/offsets T
// is replaced by the offsets' total), lengths | offsets, offsets_dtype, out_dtype (Ai's; default
// fp32), scale. args:
//   random (default false): A ~ U(-1, 1)·scale everywhere (the upper part must be ignored);
//   otherwise A is GDN's chunk_scaled_dot_kkt of fla's test data (training_ops.md §5): per chunk
//   A[t, j] = β_t (k_t·k_j) exp(G_t − G_j) for j < t, k l2-normalised (dim K, default 64),
//   β = sigmoid(U(0, 1)), G the chunk cumsum of g = logsigmoid(U(0, 1)) / gate_div (`gates`,
//   default true; without, G = 0: the worst conditioning), other elements U(-1, 1) garbage;
//   K, gate_div (default 1); chunk_size (default: A's last dim; a mismatch case);
//   T (with lengths/offsets: A's T instead of the offsets' total, for a mismatch case).
#include <cmath>
#include <vector>

#include "ops/training/common/case_args.h"
#include "ops/training/solve_tril/solve_tril.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

// The sequences' row ranges [first, last) in the flattened [B·T] rows.
std::vector<std::pair<int64_t, int64_t>> sequences(const Problem& p, int64_t B, int64_t T) {
  std::vector<std::pair<int64_t, int64_t>> s;
  if (!p.offsets.empty()) {
    for (size_t n = 0; n + 1 < p.offsets.size(); ++n) s.push_back({p.offsets[n], p.offsets[n + 1]});
  } else {
    for (int64_t b = 0; b < B; ++b) s.push_back({b * T, (b + 1) * T});
  }
  return s;
}

// A in place from the kkt recipe (see the header comment).
void make_kkt(const CaseSpec& cs, Problem* p, Input* a) {
  const Shape& sh = a->view.shape();
  const int64_t B = sh[0], T = sh[1], H = sh[2], BT = sh[3];
  const int64_t K = static_cast<int64_t>(number(cs, "K", 64));
  const bool gates = flag(cs, "gates", true);
  const double div = number(cs, "gate_div", 1.0);
  Input k = data_input("k", DType::fp64, {B, T, H, K}, cs.seed + 11, 1.0);
  Input u = data_input("u", DType::fp64, {B, T, H, 2}, cs.seed + 12, 1.0);
  const double* kd = static_cast<const double*>(k.view.data);
  const double* ud = static_cast<const double*>(u.view.data);
  std::vector<double> kn(static_cast<size_t>(B * T * H * K)), beta(B * T * H), G(B * T * H);
  for (int64_t r = 0; r < B * T * H; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < K; ++c) ss += kd[r * K + c] * kd[r * K + c];
    const double inv = 1.0 / std::sqrt(std::max(ss, 1e-30));
    for (int64_t c = 0; c < K; ++c) kn[r * K + c] = kd[r * K + c] * inv;
    const double u0 = 0.5 * (ud[2 * r] + 1.0), u1 = 0.5 * (ud[2 * r + 1] + 1.0);
    beta[r] = 1.0 / (1.0 + std::exp(-u0));
    G[r] = gates ? -std::log1p(std::exp(-u1)) / div : 0.0;  // logsigmoid(u1) / div
  }
  visit_floating(a->view.dtype, [&](auto t) {
    using T_ = decltype(t);
    T_* d = static_cast<T_*>(a->view.data);
    for (const auto& [first, last] : sequences(*p, B, T))
      for (int64_t lo = first; lo < last; lo += BT) {
        const int64_t hi = std::min(last, lo + BT);
        for (int64_t h = 0; h < H; ++h) {
          double acc = 0;  // G: the chunk-local cumsum of g
          std::vector<double> Gc(static_cast<size_t>(hi - lo));
          for (int64_t t0 = lo; t0 < hi; ++t0) Gc[t0 - lo] = acc += G[t0 * H + h];
          for (int64_t i = lo; i < hi; ++i)
            for (int64_t j = lo; j < i; ++j) {
              double dot = 0;
              for (int64_t c = 0; c < K; ++c)
                dot += kn[(i * H + h) * K + c] * kn[(j * H + h) * K + c];
              d[(i * H + h) * BT + (j - lo)] =
                  from_double<T_>(beta[i * H + h] * dot * std::exp(Gc[i - lo] - Gc[j - lo]));
            }
        }
      }
  });
}

// The double standard's plain baseline: column-by-column forward substitution of the whole
// chunk with fp32 sums (fp64 for fp64 A), each element rounded once to Ai's dtype.
template <class T, class U>
void plain(const Problem& p, const TensorView& a, const TensorView& o) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* ad = static_cast<const T*>(a.data);
  U* od = static_cast<U*>(o.data);
  const int64_t B = a.sizes[0], T_ = a.sizes[1], H = a.sizes[2], BT = a.sizes[3];
  std::vector<C> x(static_cast<size_t>(BT * BT));
  for (const auto& [first, last] : sequences(p, B, T_))
    for (int64_t lo = first; lo < last; lo += BT) {
      const int64_t L = std::min(BT, last - lo);
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t c = 0; c < L; ++c)
          for (int64_t i = 0; i < L; ++i) {
            C s = 0;
            for (int64_t j = c; j < i; ++j)
              s += static_cast<C>(to_double(ad[((lo + i) * H + h) * BT + j])) * x[j * BT + c];
            x[i * BT + c] = i < c ? C(0) : i == c ? C(1) : -s;
          }
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < BT; ++j)
            od[((lo + i) * H + h) * BT + j] =
                from_double<U>(j < L ? static_cast<double>(x[i * BT + j]) : 0.0);
      }
    }
}

class SolveTrilDriver final : public FixedDriver {
 public:
  SolveTrilDriver()
      : FixedDriver(
            {.ops = {"solve_tril"},
             .folder = "training/solve_tril",
             .fields = {"shape", "scale", "lengths", "offsets", "offsets_dtype", "out_dtype"},
             .dtype = DType::fp32,
             .args = {{"random", ArgKind::boolean},
                      {"K", ArgKind::integer},
                      {"gates", ArgKind::boolean},
                      {"gate_div", ArgKind::number},
                      {"chunk_size", ArgKind::integer},
                      {"T", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "A's [B, T, HV, BT]"));
    Shape shape = *cs.shape;
    if ((cs.lengths || cs.offsets) && shape.size() < 2)
      return case_error(row, "shape must have at least [B, T]");
    bool packed = false;
    Input off;
    RECOPS_RETURN_IF_ERROR(training_args::packed_time(row, p, &shape, &off, &packed));
    const DType out_dtype = row.out_dtype.value_or(DType::fp32);
    auto& sc = p->scalars;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("chunk_size")) sc["chunk_size"] = number(cs, "chunk_size", -1);
    sc["out_dtype"] = static_cast<double>(static_cast<int>(out_dtype));
    sc["packed"] = packed;
    p->inputs.clear();
    p->inputs.push_back(data_input("A", p->dtype, shape, cs.seed, cs.scale));
    const bool valid = shape.size() == 4 && is_floating(p->dtype) &&
                       (shape[3] == 16 || shape[3] == 32 || shape[3] == 64) &&
                       (!packed || (shape[0] == 1 && p->offsets.back() == shape[1]));
    if (valid && !flag(cs, "random", false)) make_kkt(cs, p, &p->inputs.back());
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {};
    const char* names[] = {"B", "T", "HV", "BT"};
    for (size_t i = 0; i < shape.size() && i < 4; ++i) p->sizes.push_back({names[i], shape[i]});
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"Ai", shape, out_dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    SolveTrilArgs a;
    a.A = in[0];
    if (p.scalars.at("packed") != 0) a.seq_offsets = in[1];
    a.out_dtype = static_cast<DType>(static_cast<int>(p.scalars.at("out_dtype")));
    if (const auto it = p.scalars.find("chunk_size"); it != p.scalars.end())
      a.chunk_size = static_cast<int64_t>(it->second);
    return solve_tril(a, out[0], ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const TensorView& a = p.inputs[0].view;
    const TensorView o = (*out)[0].view();
    bool ok = false;
    visit_floating(a.dtype, [&](auto t) {
      ok = visit_floating(o.dtype, [&](auto u) { plain<decltype(t), decltype(u)>(p, a, o); });
    });
    if (!ok) return Status(StatusCode::internal, "solve_tril: plain baseline with a bad dtype");
    return Status::Ok();
  }

  // Byte floor: A read once, Ai written once, seq_offsets counted.
  double bytes(const Problem& p) const override {
    double b = 0;
    for (const Input& in : p.inputs) b += static_cast<double>(in.view.numel() * in.view.itemsize());
    for (const Output& o : p.outputs) {
      int64_t n = 1;
      for (int64_t s : o.shape) n *= s;
      b += static_cast<double>(n * dtype_size(o.dtype));
    }
    return b;
  }

  // Per chunk and head about BT³/3 multiply-adds (the triangular inverse).
  double flops(const Problem& p) const override {
    const Shape& s = p.inputs[0].view.shape();
    if (s.size() != 4) return -1;
    return 2.0 / 3.0 * static_cast<double>(s[0] * s[1] * s[2]) * static_cast<double>(s[3] * s[3]);
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(SolveTrilDriver);

}  // namespace recops::cli
