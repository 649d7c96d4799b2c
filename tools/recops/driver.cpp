// tools/recops/driver.cpp: the driver registry and the helpers every driver shares.
#include "tools/recops/driver.h"

#include "tools/recops/drivers/drivers.h"

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

Status Driver::golden(const Problem& p, std::vector<Tensor>* out) const {
  *out = alloc_outputs(p, Device::cpu());
  Context ctx;
  ctx.impl = "reference";
  return run(p, views(p.inputs), views(*out), ctx);
}

const std::vector<std::unique_ptr<Driver>>& drivers() {
  static const std::vector<std::unique_ptr<Driver>> all = [] {
    std::vector<std::unique_ptr<Driver>> v;
    v.push_back(make_cumsum_driver());
    v.push_back(make_jagged_to_padded_dense_driver());
    v.push_back(make_dense_to_jagged_driver());
    v.push_back(make_hstu_attn_driver());
    v.push_back(make_stem_prepare_driver());
    v.push_back(make_stem_indexer_driver());
    v.push_back(make_block_sparse_attention_driver());
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
    for (const auto& o : d->ops()) s.ops[o] = OpSchema{d->folder(), d->fields(o)};
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

}  // namespace recops::cli
