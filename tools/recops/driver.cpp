// tools/recops/driver.cpp: the driver registry and the helpers every driver shares.
#include "tools/recops/driver.h"

#include <algorithm>

#include "core/cuda/runtime.h"
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

std::vector<Tensor> alloc_outputs(const Problem& p, Device dev) {
  std::vector<Tensor> out;
  for (const auto& o : p.outputs) out.push_back(Tensor::empty(o.shape, o.dtype, dev));
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
  const auto in_views = views(dev_in);
  const auto out_views = views(dev_out);
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
