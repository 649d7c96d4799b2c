// tensorflow/kit_tf.cpp: the TensorFlow half of the op kit (librecops_tf.so, loaded by
// python/recops/tensorflow.py with tf.load_op_library). At load, every OpDef of the registry
// becomes one TF op "Recops<CamelName>" (CPU kernel), mirroring torch/kit.cpp:
//   - tensor arguments are inputs (dtype attr "T_<arg>"); an optional tensor is an input plus a
//     bool attr "has_<arg>" (TF has no optional inputs; the wrapper passes an empty placeholder);
//   - int arguments are int attrs, optional ints list(int) attrs of length 0 or 1, bools bool
//   attrs,
//     floats string attrs holding the value's repr ("" = None: TF's float attrs are 32-bit, and the
//     op must see the same double as the torch binding), dtypes string attrs ("" = None);
//   - outputs "o_<out>" of type attr "TO_<out>" (TF fixes output types when a node is built, so the
//     wrapper asks recops_tf_out_dtypes, which runs the op's shape function, for them);
//   - the shape function runs the op's shape function (null data, as torch's Meta kernel does)
//     when the input shapes are known, else gives unknown dims of the right rank.
// The kernel wraps the TF tensors (always dense) as TensorViews and calls the op's run. Gradients
// are registered in Python (they call the table's backward op). No torch here.
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/kit/op_def.h"
#include "recops/context.h"
#include "recops/tensor_view.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace recops::tf_binding {
namespace {

namespace tf = ::tensorflow;
using kit::ArgType;

std::string tf_op_name(const std::string& op) {
  std::string s = "Recops";
  bool up = true;
  for (char c : op) {
    if (c == '_') {
      up = true;
      continue;
    }
    s += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return s;
}

// TF input/output names must be lower case.
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::map<std::string, const kit::OpDef*>& by_tf_name() {
  static std::map<std::string, const kit::OpDef*> m;
  return m;
}

std::optional<DType> from_tf(tf::DataType t) {
  switch (t) {
    case tf::DT_DOUBLE: return DType::fp64;
    case tf::DT_FLOAT: return DType::fp32;
    case tf::DT_HALF: return DType::fp16;
    case tf::DT_BFLOAT16: return DType::bf16;
    case tf::DT_FLOAT8_E4M3FN: return DType::fp8_e4m3;
    case tf::DT_INT32: return DType::int32;
    case tf::DT_INT64: return DType::int64;
    case tf::DT_UINT8: return DType::uint8;
    case tf::DT_BOOL: return DType::boolean;
    default: return std::nullopt;
  }
}

tf::DataType to_tf(DType t) {
  switch (t) {
    case DType::fp64: return tf::DT_DOUBLE;
    case DType::fp32: return tf::DT_FLOAT;
    case DType::fp16: return tf::DT_HALF;
    case DType::bf16: return tf::DT_BFLOAT16;
    case DType::fp8_e4m3: return tf::DT_FLOAT8_E4M3FN;
    case DType::int32: return tf::DT_INT32;
    case DType::int64: return tf::DT_INT64;
    case DType::uint8: return tf::DT_UINT8;
    case DType::boolean: return tf::DT_BOOL;
  }
  return tf::DT_INVALID;
}

constexpr const char* kTypes = "{double, float, half, bfloat16, int32, int64, uint8, bool}";

tf::Status to_tf_status(const Status& s) {
  if (s.ok()) return tf::Status();
  if (s.code() == StatusCode::not_implemented) return tf::errors::Unimplemented(s.message());
  return tf::errors::InvalidArgument(s.message());
}

// One argument's non-tensor value (or, for an optional tensor, whether it was given).
struct Scalar {
  int64_t i = 0;
  std::optional<int64_t> oi;
  double f = 0;
  std::optional<double> of;
  bool b = false;
  std::optional<DType> dt;
};

tf::Status parse_float(const std::string& op, const std::string& arg, const std::string& s,
                       std::optional<double>* out) {
  if (s.empty()) {
    out->reset();
    return tf::Status();
  }
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0')
    return tf::errors::InvalidArgument(op, ": ", arg, "='", s, "' is not a float");
  *out = v;
  return tf::Status();
}

// The attrs of every non-tensor argument, from an OpKernelConstruction or an InferenceContext.
template <class C>
tf::Status read_scalars(const kit::OpDef& d, C* c, std::vector<Scalar>* out) {
  out->assign(d.args.size(), Scalar{});
  for (size_t i = 0; i < d.args.size(); ++i) {
    const kit::ArgDef& a = d.args[i];
    const std::string n = lower(a.name);
    Scalar& s = (*out)[i];
    switch (a.type) {
      case ArgType::tensor: break;
      case ArgType::opt_tensor: TF_RETURN_IF_ERROR(c->GetAttr("has_" + n, &s.b)); break;
      case ArgType::int64: TF_RETURN_IF_ERROR(c->GetAttr(n, &s.i)); break;
      case ArgType::opt_int64: {
        std::vector<int64_t> v;
        TF_RETURN_IF_ERROR(c->GetAttr(n, &v));
        if (v.size() > 1)
          return tf::errors::InvalidArgument(d.name, ": ", a.name, " is one int or None");
        if (!v.empty()) s.oi = v[0];
        break;
      }
      case ArgType::float64:
      case ArgType::opt_float64: {
        std::string v;
        TF_RETURN_IF_ERROR(c->GetAttr(n, &v));
        TF_RETURN_IF_ERROR(parse_float(d.name, a.name, v, &s.of));
        if (a.type == ArgType::float64) {
          if (!s.of) return tf::errors::InvalidArgument(d.name, ": ", a.name, " is required");
          s.f = *s.of;
        }
        break;
      }
      case ArgType::boolean: TF_RETURN_IF_ERROR(c->GetAttr(n, &s.b)); break;
      case ArgType::opt_dtype: {
        std::string v;
        TF_RETURN_IF_ERROR(c->GetAttr(n, &v));
        if (!v.empty()) {
          s.dt = dtype_from_name(v);
          if (!s.dt)
            return tf::errors::InvalidArgument(d.name, ": ", a.name, "='", v,
                                               "' is not a dtype name");
        }
        break;
      }
    }
  }
  return tf::Status();
}

// Fills the op's call state; views[i] is argument i's tensor (nullopt: an absent optional one).
tf::Status fill_args(const kit::OpDef& d, void* call, const std::vector<Scalar>& sc,
                     const std::vector<std::optional<TensorView>>& views) {
  for (size_t i = 0; i < d.args.size(); ++i) {
    const kit::ArgDef& a = d.args[i];
    void* m = a.member(call);
    const Scalar& s = sc[i];
    switch (a.type) {
      case ArgType::tensor:
        if (!views[i]) return tf::errors::InvalidArgument(d.name, ": ", a.name, " is required");
        *static_cast<TensorView*>(m) = *views[i];
        break;
      case ArgType::opt_tensor: *static_cast<std::optional<TensorView>*>(m) = views[i]; break;
      case ArgType::int64:
        if (!a.set_int(call, s.i))
          return tf::errors::InvalidArgument(d.name, ": ", a.name, "=", s.i, " is out of range");
        break;
      case ArgType::opt_int64: *static_cast<std::optional<int64_t>*>(m) = s.oi; break;
      case ArgType::float64: *static_cast<double*>(m) = s.f; break;
      case ArgType::opt_float64: *static_cast<std::optional<double>*>(m) = s.of; break;
      case ArgType::boolean: *static_cast<bool*>(m) = s.b; break;
      case ArgType::opt_dtype: *static_cast<std::optional<DType>*>(m) = s.dt; break;
    }
  }
  return tf::Status();
}

bool is_tensor(const kit::ArgDef& a) {
  return a.type == ArgType::tensor || a.type == ArgType::opt_tensor;
}

// ---- the kernel --------------------------------------------------------------------------------

class KitKernel : public tf::OpKernel {
 public:
  explicit KitKernel(tf::OpKernelConstruction* c) : OpKernel(c) {
    auto it = by_tf_name().find(c->def().op());
    OP_REQUIRES(c, it != by_tf_name().end(),
                tf::errors::Internal("recops: no kit op for ", c->def().op()));
    d_ = it->second;
    OP_REQUIRES_OK(c, read_scalars(*d_, c, &scalars_));
  }

  void Compute(tf::OpKernelContext* c) override {
    const kit::OpDef& d = *d_;
    std::vector<std::optional<TensorView>> views(d.args.size());
    int k = 0;  // TF input index
    for (size_t i = 0; i < d.args.size(); ++i) {
      const kit::ArgDef& a = d.args[i];
      if (!is_tensor(a)) continue;
      const tf::Tensor& t = c->input(k++);
      if (a.type == ArgType::opt_tensor && !scalars_[i].b) continue;
      auto v = view_of(t, d.name, a.name);
      OP_REQUIRES_OK(c, v.first);
      views[i] = v.second;
    }
    std::shared_ptr<void> call = d.new_call();
    OP_REQUIRES_OK(c, fill_args(d, call.get(), scalars_, views));
    Context ctx;
    std::vector<kit::OutSpec> specs;
    OP_REQUIRES_OK(c, to_tf_status(d.shapes(call.get(), &specs, ctx)));
    OP_REQUIRES(c, specs.size() == d.outs.size(),
                tf::errors::Internal(d.name, ": shape function gave ", specs.size(), " outputs"));
    kit::Outputs o;
    for (size_t i = 0; i < specs.size(); ++i) {
      const tf::DataType want = c->expected_output_dtype(static_cast<int>(i));
      const DType dt = specs[i].present ? specs[i].dtype : from_tf(want).value_or(DType::fp32);
      OP_REQUIRES(
          c, to_tf(dt) == want,
          tf::errors::InvalidArgument(d.name, ": output ", d.outs[i].name, " is ", dtype_name(dt),
                                      " but the node declares ", tf::DataTypeString(want)));
      tf::TensorShape shape;
      OP_REQUIRES_OK(c, tf::TensorShape::BuildTensorShape(
                            specs[i].present ? specs[i].shape : Shape{0}, &shape));
      tf::Tensor* out = nullptr;
      OP_REQUIRES_OK(c, c->allocate_output(static_cast<int>(i), shape, &out));
      o.present.push_back(specs[i].present);
      o.views.push_back(specs[i].present ? view_of(*out, d.name, d.outs[i].name).second
                                         : TensorView{});
    }
    tf::Tensor ws;
    if (d.workspace) {
      if (const size_t bytes = d.workspace(call.get(), o); bytes > 0) {
        OP_REQUIRES_OK(
            c, c->allocate_temp(tf::DT_UINT8, tf::TensorShape({static_cast<int64_t>(bytes)}), &ws));
        ctx.workspace = const_cast<char*>(ws.tensor_data().data());
        ctx.workspace_bytes = bytes;
      }
    }
    OP_REQUIRES_OK(c, to_tf_status(d.run(call.get(), o, ctx)));
  }

 private:
  static std::pair<tf::Status, TensorView> view_of(const tf::Tensor& t, const std::string& op,
                                                   const std::string& name) {
    const auto dt = from_tf(t.dtype());
    if (!dt)
      return {tf::errors::InvalidArgument(op, ": ", name, " has unsupported dtype ",
                                          tf::DataTypeString(t.dtype())),
              {}};
    if (t.dims() > kMaxDims)
      return {tf::errors::InvalidArgument(op, ": ", name, " has ", t.dims(), " dims (at most ",
                                          kMaxDims, ")"),
              {}};
    Shape s(static_cast<size_t>(t.dims()));
    for (int i = 0; i < t.dims(); ++i) s[static_cast<size_t>(i)] = t.dim_size(i);
    return {tf::Status(),
            TensorView(const_cast<char*>(t.tensor_data().data()), *dt, Device::cpu(), s)};
  }

  const kit::OpDef* d_ = nullptr;
  std::vector<Scalar> scalars_;
};

tf::OpKernel* make_kernel(tf::OpKernelConstruction* c) {
  return new KitKernel(c);
}

// ---- shapes ------------------------------------------------------------------------------------

tf::Status infer_shapes(const kit::OpDef& d, tf::shape_inference::InferenceContext* c) {
  namespace si = tf::shape_inference;
  std::vector<Scalar> sc;
  TF_RETURN_IF_ERROR(read_scalars(d, c, &sc));
  // Unknown dims are probed with a few values: an output dim that comes out the same for every
  // probe is taken as known, one that varies is unknown.
  std::map<std::string, si::ShapeHandle> by_name;
  std::vector<std::vector<kit::OutSpec>> runs;
  bool known = true, ran = true;
  for (const int64_t probe : {1, 5, 11}) {
    std::vector<std::optional<TensorView>> views(d.args.size());
    int k = 0;
    for (size_t i = 0; i < d.args.size(); ++i) {
      const kit::ArgDef& a = d.args[i];
      if (!is_tensor(a)) continue;
      const si::ShapeHandle h = c->input(k);
      tf::DataType t = tf::DT_FLOAT;
      TF_RETURN_IF_ERROR(c->GetAttr("T_" + lower(a.name), &t));
      ++k;
      by_name[a.name] = h;
      if (a.type == ArgType::opt_tensor && !sc[i].b) continue;
      if (!c->RankKnown(h) || c->Rank(h) > kMaxDims) {
        ran = false;
        continue;
      }
      Shape s(static_cast<size_t>(c->Rank(h)));
      for (size_t j = 0; j < s.size(); ++j) {
        const int64_t v = c->Value(c->Dim(h, static_cast<int64_t>(j)));
        known = known && v >= 0;
        s[j] = v >= 0 ? v : probe;
      }
      views[i] = TensorView(nullptr, from_tf(t).value_or(DType::fp32), Device::cpu(), s);
    }
    if (!ran || d.fake_in_python) {  // a fake_in_python op's shape function reads data
      ran = false;
      break;
    }
    std::shared_ptr<void> call = d.new_call();
    TF_RETURN_IF_ERROR(fill_args(d, call.get(), sc, views));
    std::vector<kit::OutSpec> specs;
    // A refusal is no error here: some shape functions need the data (e.g. an output size that
    // is a sum of lengths); the kernel reports the op's own errors.
    const Status st = d.shapes(call.get(), &specs, Context{});
    ran = st.ok() && specs.size() == d.outs.size() &&
          (runs.empty() || specs.size() == runs[0].size());
    if (!ran) break;
    runs.push_back(std::move(specs));
    if (known) break;
  }
  for (size_t i = 0; i < d.outs.size(); ++i) {
    const int o = static_cast<int>(i);
    if (!d.outs[i].like.empty() && by_name.count(d.outs[i].like)) {
      c->set_output(o, by_name[d.outs[i].like]);
    } else if (!ran) {
      c->set_output(o, c->UnknownShape());
    } else if (!runs[0][i].present) {
      c->set_output(o, c->MakeShape({0}));
    } else {
      const Shape& s0 = runs[0][i].shape;
      std::vector<si::DimensionHandle> dims;
      for (size_t j = 0; j < s0.size(); ++j) {
        bool same = true;
        for (const auto& r : runs)
          same = same && r[i].shape.size() == s0.size() && r[i].shape[j] == s0[j];
        dims.push_back(same ? c->MakeDim(s0[j]) : c->UnknownDim());
      }
      c->set_output(o, c->MakeShape(dims));
    }
  }
  return tf::Status();
}

// ---- registration ------------------------------------------------------------------------------

bool register_op(const kit::OpDef& d) {
  // TF tensors are immutable: an op that writes an argument in place (kit::ArgOpts::mutated) has
  // no TF form.
  for (const auto& a : d.args)
    if (a.opts.mutated) return false;
  const std::string name = tf_op_name(d.name);
  if (by_tf_name().count(name)) return false;
  tf::register_op::OpDefBuilderWrapper b(name.c_str());
  for (const auto& a : d.args) {
    const std::string n = lower(a.name);
    switch (a.type) {
      case ArgType::tensor:
      case ArgType::opt_tensor:
        b.Input(n + ": T_" + n).Attr("T_" + n + ": " + kTypes);
        if (a.type == ArgType::opt_tensor) b.Attr("has_" + n + ": bool");
        break;
      case ArgType::int64: b.Attr(n + ": int"); break;
      case ArgType::opt_int64: b.Attr(n + ": list(int) >= 0"); break;
      case ArgType::float64:
      case ArgType::opt_float64:
      case ArgType::opt_dtype: b.Attr(n + ": string"); break;
      case ArgType::boolean: b.Attr(n + ": bool"); break;
    }
  }
  for (const auto& o : d.outs) {
    const std::string n = lower(o.name);
    b.Output("o_" + n + ": TO_" + n).Attr("TO_" + n + ": " + kTypes);
  }
  const kit::OpDef* dp = &d;
  b.SetShapeFn([dp](tf::shape_inference::InferenceContext* c) { return infer_shapes(*dp, c); });
  b();
  by_tf_name()[name] = &d;
  tf::kernel_factory::OpKernelRegistrar(
      tf::KernelDefBuilder(name.c_str()).Device(tf::DEVICE_CPU).Build(), "RecopsKitKernel",
      &make_kernel);
  return true;
}

const bool registered = [] {
  for (const auto& d : kit::registry().defs) register_op(d);
  return true;
}();

// ---- the table and the output dtypes, for python/recops/tensorflow.py (ctypes) -----------------

const char* type_name(ArgType t) {
  switch (t) {
    case ArgType::tensor: return "tensor";
    case ArgType::opt_tensor: return "opt_tensor";
    case ArgType::int64: return "int";
    case ArgType::opt_int64: return "opt_int";
    case ArgType::float64: return "float";
    case ArgType::opt_float64: return "opt_float";
    case ArgType::boolean: return "bool";
    case ArgType::opt_dtype: return "opt_dtype";
  }
  return "?";
}

std::string table_json() {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& [tfname, dp] : by_tf_name()) {
    const kit::OpDef& d = *dp;
    nlohmann::json args = nlohmann::json::array(), outs = nlohmann::json::array();
    for (const auto& a : d.args) {
      nlohmann::json j = {{"name", a.name},
                          {"tf", lower(a.name)},
                          {"type", type_name(a.type)},
                          {"kw", a.opts.kw},
                          {"grad", a.opts.grad}};
      if (a.opts.def) j["def"] = a.opts.def;
      nlohmann::json py = nlohmann::json::object();
      const kit::PyArg& p = a.opts.py;
      for (const auto& [key, val] : {std::pair{"def", p.def},
                                     {"names", p.names},
                                     {"pair", p.pair},
                                     {"rule", p.rule},
                                     {"needed_with", p.needed_with},
                                     {"why", p.why}})
        if (val) py[key] = val;
      if (p.kw) py["kw"] = true;
      j["py"] = py;
      args.push_back(j);
    }
    for (const auto& o : d.outs)
      outs.push_back({{"name", o.name}, {"tf", lower(o.name)}, {"grad", o.grad}});
    ops.push_back({{"name", d.name},
                   {"tf_name", tfname},
                   {"family", d.family},
                   {"python_name", d.python_name},
                   {"doc", d.doc},
                   {"backward", d.backward},
                   {"forward_only", d.forward_only},
                   {"device_arg", d.device_arg},
                   {"args", args},
                   {"outs", outs}});
  }
  return ops.dump();
}

// spec: one JSON value per argument: a tensor {"dtype": "fp32", "shape": [..], "data": [..]}
// (-1 = an unknown size; data: an eager integer tensor's values, else zeros are read),
// null, a number, a bool or a dtype name. Returns {"dtypes": [..]} or {"error": "..."}.
std::string out_dtypes_json(const std::string& op, const std::string& spec) {
  const kit::OpDef* d = kit::find_def(op);
  if (!d) return nlohmann::json({{"error", op + " is not a recops op"}}).dump();
  const nlohmann::json in = nlohmann::json::parse(spec, nullptr, false);
  if (!in.is_array() || in.size() != d->args.size())
    return nlohmann::json({{"error", op + ": bad argument spec"}}).dump();
  // First with null data (as torch's Meta kernel), then, for a shape function that needs the
  // data (a size read from offsets or lengths), with the integer tensors' values where the spec
  // has them and zeros elsewhere, then as an empty batch: the dtypes do not depend on the values.
  std::vector<kit::OutSpec> specs;
  std::string error;
  for (const int attempt : {0, 1, 2}) {
    const bool zeros = attempt > 0, empty = attempt == 2;
    std::vector<Scalar> sc(d->args.size());
    std::vector<std::optional<TensorView>> views(d->args.size());
    std::vector<std::unique_ptr<char, decltype(&std::free)>> buffers;
    for (size_t i = 0; i < d->args.size(); ++i) {
      const kit::ArgDef& a = d->args[i];
      const nlohmann::json& v = in[i];
      Scalar& s = sc[i];
      if (is_tensor(a)) {
        if (v.is_null()) continue;
        Shape shape;
        // An unknown extent (-1, a graph's None) is read as 1; a known 0 stays 0 (an empty
        // lengths tensor of a batch without keys is valid).
        for (const auto& e : v["shape"]) {
          const int64_t x = e.get<int64_t>();
          shape.push_back(x < 0 ? 1 : x);
        }
        const auto dt = dtype_from_name(v["dtype"].get<std::string>());
        // The last attempt, for a graph's tensors without values: an empty batch (a 1-D integer
        // tensor becomes one 0: lengths, indices and offsets that agree with empty values).
        if (empty && !shape.empty()) shape[0] = shape.size() == 1 && dt && is_integral(*dt) ? 1 : 0;
        if (!dt || shape.size() > static_cast<size_t>(kMaxDims))
          return nlohmann::json({{"error", op + ": " + a.name + ": unsupported tensor"}}).dump();
        void* data = nullptr;
        if (zeros) {
          int64_t n = dtype_size(*dt);
          for (int64_t e : shape) n = TensorView::mul_sat(n, e);
          if (n > (int64_t{1} << 30)) return nlohmann::json({{"error", "too large"}}).dump();
          buffers.emplace_back(static_cast<char*>(std::calloc(static_cast<size_t>(n) + 1, 1)),
                               &std::free);
          data = buffers.back().get();
          if (!empty &&
              v.contains("data")) {  // an integer tensor's values (offsets, lengths, indices)
            const auto& vals = v["data"];
            for (size_t j = 0; j < vals.size() && static_cast<int64_t>(j) * dtype_size(*dt) < n;
                 ++j) {
              if (*dt == DType::int64) static_cast<int64_t*>(data)[j] = vals[j].get<int64_t>();
              if (*dt == DType::int32)
                static_cast<int32_t*>(data)[j] = static_cast<int32_t>(vals[j].get<int64_t>());
            }
          }
        }
        views[i] = TensorView(data, *dt, Device::cpu(), shape);
        s.b = true;
      } else if (v.is_null()) {
        continue;
      } else if (a.type == ArgType::opt_dtype) {
        s.dt = dtype_from_name(v.get<std::string>());
      } else if (a.type == ArgType::boolean) {
        s.b = v.get<bool>();
      } else if (a.type == ArgType::float64 || a.type == ArgType::opt_float64) {
        s.f = v.get<double>();
        s.of = s.f;
      } else {
        s.i = v.get<int64_t>();
        s.oi = s.i;
      }
    }
    if (!zeros && d->fake_in_python) continue;  // its shape function reads data
    std::shared_ptr<void> call = d->new_call();
    const tf::Status fs = fill_args(*d, call.get(), sc, views);
    if (!fs.ok()) return nlohmann::json({{"error", std::string(fs.message())}}).dump();
    specs.clear();
    const Status st = d->shapes(call.get(), &specs, Context{});
    if (st.ok()) break;
    error = st.message();
    if (empty) return nlohmann::json({{"error", error}}).dump();
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : specs) out.push_back(s.present ? std::string(dtype_name(s.dtype)) : "");
  return nlohmann::json({{"dtypes", out}}).dump();
}

}  // namespace
}  // namespace recops::tf_binding

extern "C" __attribute__((visibility("default"))) const char* recops_tf_table() {
  static const std::string s = recops::tf_binding::table_json();
  return s.c_str();
}

extern "C" __attribute__((visibility("default"))) const char* recops_tf_out_dtypes(
    const char* op, const char* spec) {
  thread_local std::string s;
  try {
    s = recops::tf_binding::out_dtypes_json(op, spec);
  } catch (const std::exception& e) {
    s = nlohmann::json({{"error", e.what()}}).dump();
  }
  return s.c_str();
}
