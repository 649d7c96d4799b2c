// tools/recops/driver.cpp: the driver registry and the helpers every driver shares.
#include "tools/recops/driver.h"

#include <algorithm>
#include <cstring>

#include "core/cuda/runtime.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"
#include "tools/recops/judge.h"

namespace recops::cli {

std::vector<Input> inputs_on(const std::vector<Input>& in, Device dev) {
  std::vector<Input> out;
  out.reserve(in.size());
  for (const auto& x : in) {
    Input y;
    y.name = x.name;
    y.buf = x.buf.to(dev);
    y.view = x.view;
    y.view.device = dev;
    const auto delta =
        static_cast<const char*>(x.view.data) - static_cast<const char*>(x.buf.data());
    y.view.data = static_cast<char*>(y.buf.data()) + delta;
    out.push_back(std::move(y));
  }
  return out;
}

Status Driver::begin_make(const CaseRow& row, Problem* p, const char* shape_what) const {
  p->op = row.op;
  p->dtype = row.dtype.value_or(default_dtype(row.op));
  if (shape_what && !row.spec->shape)
    return case_error(row, std::string("needs `shape` (") + shape_what + ")");
  return Status::Ok();
}

Status Driver::golden(const Problem& p, std::vector<Tensor>* out) const {
  *out = alloc_outputs(p, Device::cpu());
  Context ctx;
  ctx.impl = "reference";
  return run(p, views(p.inputs), views(*out), ctx);
}

double set_bytes(const Problem& p) {
  double n = 0;
  for (const auto& in : p.inputs) n += static_cast<double>(in.buf.nbytes());
  for (const auto& out : p.outputs) {
    double e = static_cast<double>(dtype_size(out.dtype));
    for (int64_t s : out.shape) e *= static_cast<double>(s);
    n += e;
  }
  return n;
}

namespace {
std::vector<std::unique_ptr<Driver> (*)()>& factories() {
  static std::vector<std::unique_ptr<Driver> (*)()> f;
  return f;
}
}  // namespace

DriverRegistrar::DriverRegistrar(std::unique_ptr<Driver> (*make)()) {
  factories().push_back(make);
}

const std::vector<std::unique_ptr<Driver>>& drivers() {
  static const std::vector<std::unique_ptr<Driver>> all = [] {
    std::vector<std::unique_ptr<Driver>> v;
    for (auto make : factories()) v.push_back(make());
    // Static initialisation order is the link order: sort for a stable listing.
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return a->folder() < b->folder(); });
    return v;
  }();
  return all;
}

const Driver* driver_for(const std::string& op) {
  for (const auto& d : drivers())
    for (const auto& o : d->ops())
      if (o == op) return d.get();
  return nullptr;
}

CaseSchema case_schema() {
  CaseSchema s;
  for (const auto& d : drivers())
    for (const auto& o : d->ops())
      s.ops[o] = OpSchema{d->folder(), d->fields(o), d->args(o), d->tags(o)};
  return s;
}

namespace {
// The host values of view `v` (on the host) as a new contiguous host tensor.
Tensor gather_host(const TensorView& v) {
  Tensor t = Tensor::empty(v.shape(), v.dtype);
  const int64_t es = v.itemsize();
  const auto* src = static_cast<const char*>(v.data);
  auto* dst = static_cast<char*>(t.data());
  for_each_element(v, [&](int64_t i, int64_t off) {
    std::memcpy(dst + i * es, src + off * es, static_cast<size_t>(es));
  });
  return t;
}

// `v` moved from the buffer `from` to the same place in the buffer `to`.
TensorView rebase(const TensorView& v, const Tensor& from, const Tensor& to) {
  TensorView r = v;
  r.device = to.device();
  r.data = static_cast<char*>(to.data()) +
           (static_cast<const char*>(v.data) - static_cast<const char*>(from.data()));
  return r;
}
}  // namespace

std::vector<Tensor> alloc_outputs(const Problem& p, Device dev) {
  std::vector<Tensor> out;
  for (const auto& o : p.outputs) {
    if (o.mutates < 0) {
      out.push_back(Tensor::empty(o.shape, o.dtype, dev));
      continue;
    }
    Tensor t = gather_host(p.inputs.at(static_cast<size_t>(o.mutates)).view);
    out.push_back(dev.is_cpu() ? t : t.to(dev));
  }
  return out;
}

std::vector<TensorView> views(const std::vector<Input>& in) {
  std::vector<TensorView> v;
  for (const auto& x : in) v.push_back(x.view);
  return v;
}

std::vector<TensorView> views(const std::vector<Tensor>& t) {
  std::vector<TensorView> v;
  for (const auto& x : t) v.push_back(x.view());
  return v;
}

RunOut run_poisoned(const Driver& d, const Problem& p, const std::vector<Input>& dev_in, Device dev,
                    const Context& base, int poison_variant) {
  RunOut r;
  std::vector<Tensor> outs = alloc_outputs(p, Device::cpu());
  for (auto& t : outs) poison_fill(t.data(), t.dtype(), t.numel(), poison_variant);
  std::vector<Tensor> dev_out;
  if (dev.is_cpu()) {
    dev_out = outs;  // shares the buffers
  } else {
    for (const auto& t : outs) dev_out.push_back(t.to(dev));
  }
  auto in_views = views(dev_in);
  auto out_views = views(dev_out);
  // Outputs that are inputs written in place: a copy of the input's buffer with every element
  // outside the input's view poisoned; the op gets the view into that copy as the input and as
  // the output.
  struct Mutated {
    size_t out, in;
    Tensor host, dev;  // the copy
  };
  std::vector<Mutated> mutated;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    if (p.outputs[i].mutates < 0) continue;
    Mutated m{i, static_cast<size_t>(p.outputs[i].mutates), {}, {}};
    const Input& src = dev_in.at(m.in);
    const Tensor src_host = dev.is_cpu() ? src.buf : src.buf.to(Device::cpu());
    m.host = Tensor::empty(src.buf.shape(), src.buf.dtype());
    poison_fill(m.host.data(), m.host.dtype(), m.host.numel(), poison_variant);
    const TensorView from = rebase(src.view, src.buf, src_host);
    const TensorView to = rebase(src.view, src.buf, m.host);
    const int64_t es = from.itemsize();
    for_each_element(from, [&](int64_t, int64_t off) {
      std::memcpy(static_cast<char*>(to.data) + off * es,
                  static_cast<const char*>(from.data) + off * es, static_cast<size_t>(es));
    });
    m.dev = dev.is_cpu() ? m.host : m.host.to(dev);
    in_views[m.in] = out_views[i] = rebase(src.view, src.buf, m.dev);
    mutated.push_back(std::move(m));
  }
  Context ctx = base;
  ctx.impl_used = &r.impl_used;
  Tensor ws;
  if (const size_t wb = d.workspace_bytes(p, in_views, out_views); wb > 0) {
    ws = Tensor::empty({static_cast<int64_t>(wb)}, DType::uint8, dev);
    ctx.workspace = ws.data();
    ctx.workspace_bytes = wb;
  }
  // The poisoned outputs went up on the legacy default stream, which a non-blocking stream
  // does not wait for: finish those copies first.
  if (dev.is_cuda() && ctx.stream != nullptr) {
    if (Status s = core::cuda::synchronize(dev.index); !s.ok()) {
      r.status = s;
      r.host_out = std::move(outs);
      return r;
    }
  }
  r.status = d.run(p, in_views, out_views, ctx);
  if (dev.is_cuda()) {
    // Asynchronous kernel errors surface here.
    if (Status s = core::cuda::synchronize(dev.index); !s.ok() && r.status.ok()) r.status = s;
    for (size_t i = 0; i < outs.size(); ++i) outs[i].copy_from(dev_out[i]);
  }
  for (auto& m : mutated) {
    if (!dev.is_cpu()) m.host.copy_from(m.dev);
    const Input& src = dev_in[m.in];
    const TensorView v = rebase(src.view, src.buf, m.host);
    outs[m.out] = gather_host(v);
    // Every element of the copy outside the view must still hold the poison.
    std::vector<bool> in_view(static_cast<size_t>(m.host.numel()), false);
    const int64_t base_off =
        (static_cast<const char*>(v.data) - static_cast<const char*>(m.host.data())) / v.itemsize();
    for_each_element(
        v, [&](int64_t, int64_t off) { in_view[static_cast<size_t>(base_off + off)] = true; });
    const uint64_t poison = poison_bits(m.host.dtype(), poison_variant);
    const int64_t es = v.itemsize();
    for (int64_t e = 0; e < m.host.numel() && r.status.ok(); ++e) {
      uint64_t b = 0;
      std::memcpy(&b, static_cast<const char*>(m.host.data()) + e * es, static_cast<size_t>(es));
      if (!in_view[static_cast<size_t>(e)] && b != poison)
        r.status = Status(StatusCode::internal,
                          p.op + ": wrote element " + std::to_string(e) + " of " + src.name +
                              "'s buffer, outside the view it updates in place");
    }
  }
  r.host_out = std::move(outs);
  return r;
}

double io_bytes(const Problem& p) {
  double n = 0;
  for (const auto& x : p.inputs) n += static_cast<double>(x.view.numel() * x.view.itemsize());
  for (const auto& o : p.outputs) {
    double e = static_cast<double>(dtype_size(o.dtype));
    for (int64_t s : o.shape) e *= static_cast<double>(s);
    n += e;
  }
  return n;
}

}  // namespace recops::cli
