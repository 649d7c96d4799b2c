// torch/kit.cpp: the recops torch library. Every OpDef of the registry becomes a torch op: its
// schema, its CPU, Meta and Autograd kernels (CUDA: kit_cuda.cpp), and `_kit_ops`, the table the
// Python package builds its wrappers from. One body per dispatch key serves every op; op folders
// add hooks (kit.h) where needed.
#include "torch/kit.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/empty.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <memory>
#include <sstream>

#include "recops/context.h"
#include "recops/tensor.h"
#include "torch/convert.h"
#include "torch/kit_body.h"

namespace recops::binding {

namespace {
std::map<std::string, TorchHooks (*)()>& hook_makers() {
  static std::map<std::string, TorchHooks (*)()> m;
  return m;
}
}  // namespace

HooksRegistrar::HooksRegistrar(const char* op, TorchHooks (*make)()) {
  hook_makers()[op] = make;
}

const TorchHooks& hooks(const std::string& op) {
  static std::map<std::string, TorchHooks> made;  // filled on first use, after static init
  static std::mutex mu;
  const std::lock_guard<std::mutex> lock(mu);
  auto it = made.find(op);
  if (it != made.end()) return it->second;
  auto mk = hook_makers().find(op);
  return made.emplace(op, mk == hook_makers().end() ? TorchHooks{} : mk->second()).first->second;
}

namespace {
int64_t int_of(const c10::IValue& v) {
  if (v.isInt()) return v.toInt();
  return v.toSymInt().guard_int(__FILE__, __LINE__);
}

// dims [from, ndim) dense (kit::ArgOpts::dense_from); from < -1 counts from the end.
at::Tensor make_dense(const at::Tensor& t, int from) {
  if (from == -1) return t;
  const int64_t f = from >= 0 ? from : t.dim() + from + 1;
  return dense_from(t, f < 0 ? 0 : f);
}

// The index of argument `name` in the op's table (an output's `mutates`).
size_t arg_index(const kit::OpDef& d, const std::string& name) {
  size_t k = 0;
  while (k < d.args.size() && d.args[k].name != name) ++k;
  TORCH_INTERNAL_ASSERT(k < d.args.size(), d.name, ": no argument ", name);
  return k;
}

bool concrete(const c10::IValue& v) {
  if (v.isTensor()) return !v.toTensor().defined() || has_concrete_sizes(v.toTensor());
  if (v.isSymInt()) return v.toSymInt().maybe_as_int().has_value();
  return true;
}
}  // namespace

namespace {
// The op's arguments as its call state (Args struct + plan); keep_alive holds the dense copies the
// conversion made.
std::shared_ptr<void> to_args(const kit::OpDef& d, const Args& in, bool meta,
                              std::vector<at::Tensor>* keep_alive) {
  std::shared_ptr<void> args = d.new_call();
  const char* op = d.name.c_str();
  for (size_t i = 0; i < d.args.size(); ++i) {
    const kit::ArgDef& a = d.args[i];
    const c10::IValue& v = in[i];
    void* m = a.member(args.get());
    switch (a.type) {
      case kit::ArgType::tensor:
      case kit::ArgType::opt_tensor: {
        if (v.isNone() || !v.toTensor().defined()) {
          TORCH_CHECK(a.type == kit::ArgType::opt_tensor, op, ": ", a.name,
                      " is an undefined tensor");
          static_cast<std::optional<TensorView>*>(m)->reset();
          break;
        }
        at::Tensor t = v.toTensor();
        TORCH_INTERNAL_ASSERT(!(a.opts.mutated && a.opts.dense_from != -1), op, ": ", a.name,
                              " is mutated in place and so cannot be copied (dense_from)");
        if (!meta && a.opts.dense_from != -1 && t.dim() > a.opts.dense_if_ndim_gt) {
          t = make_dense(t, a.opts.dense_from);
          keep_alive->push_back(t);
        }
        const TensorView view = to_view(t, op, a.name);
        if (a.type == kit::ArgType::tensor) {
          *static_cast<TensorView*>(m) = view;
        } else {
          *static_cast<std::optional<TensorView>*>(m) = view;
        }
        break;
      }
      case kit::ArgType::int64: {
        const int64_t x = int_of(v);
        TORCH_CHECK(a.set_int(args.get(), x), op, ": ", a.name, "=", x, " is out of range");
        break;
      }
      case kit::ArgType::opt_int64:
        *static_cast<std::optional<int64_t>*>(m) =
            v.isNone() ? std::nullopt : std::optional<int64_t>(int_of(v));
        break;
      case kit::ArgType::float64: *static_cast<double*>(m) = v.toDouble(); break;
      case kit::ArgType::opt_float64:
        *static_cast<std::optional<double>*>(m) =
            v.isNone() ? std::nullopt : std::optional<double>(v.toDouble());
        break;
      case kit::ArgType::boolean: *static_cast<bool*>(m) = v.toBool(); break;
      case kit::ArgType::opt_dtype:
        *static_cast<std::optional<DType>*>(m) =
            v.isNone() ? std::nullopt
                       : std::optional<DType>(to_dtype(v.toScalarType(), op, a.name));
        break;
    }
  }
  return args;
}
}  // namespace

const c10::IValue& arg(const Args& a, const std::string& op, const std::string& name) {
  const kit::OpDef* d = kit::find_def(op);
  TORCH_INTERNAL_ASSERT(d != nullptr, op, " is not in the kit's registry");
  size_t i = 0;
  while (i < d->args.size() && d->args[i].name != name) ++i;
  TORCH_INTERNAL_ASSERT(i < d->args.size() && i < a.size(), op, " has no argument ", name);
  return a[i];
}

std::vector<at::Tensor> call(const std::string& op, Args args) {
  static std::mutex mu;
  static std::map<std::string, c10::OperatorHandle> handles;
  const c10::OperatorHandle* h = nullptr;
  {
    const std::lock_guard<std::mutex> lock(mu);
    auto it = handles.find(op);
    if (it == handles.end())
      it = handles
               .emplace(op, c10::Dispatcher::singleton().findSchemaOrThrow(
                                ("recops::" + op).c_str(), ""))
               .first;
    h = &it->second;
  }
  torch::jit::Stack st(std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  h->callBoxed(&st);
  std::vector<at::Tensor> out;
  for (auto& v : st) out.push_back(v.toTensor());
  return out;
}

namespace {
bool has_tensor_args(const kit::OpDef& d) {
  for (const auto& a : d.args)
    if (a.type == kit::ArgType::tensor || a.type == kit::ArgType::opt_tensor) return true;
  return false;
}
}  // namespace

const at::Tensor& device_tensor(const kit::OpDef& d, const Args& in) {
  static const at::Tensor cpu = at::empty({0});  // an op without tensor arguments: the CPU
  if (!has_tensor_args(d)) return cpu;
  const c10::IValue& v = in.at(static_cast<size_t>(d.device_arg));
  TORCH_CHECK(v.isTensor() && v.toTensor().defined(), d.name, ": ", d.args[d.device_arg].name,
              " (the argument the outputs follow) must be a tensor");
  return v.toTensor();
}

namespace {
// A tensor on `meta` mixed with real ones would be read as memory it does not have: every tensor
// argument is on `meta` exactly when the one the outputs follow is (the entries compare the
// real devices).
void check_meta_devices(const kit::OpDef& d, const Args& in) {
  if (!has_tensor_args(d)) return;
  const at::Tensor& like = device_tensor(d, in);
  for (size_t i = 0; i < d.args.size(); ++i) {
    if (!in[i].isTensor() || !in[i].toTensor().defined()) continue;
    const at::Tensor& t = in[i].toTensor();
    TORCH_CHECK(t.is_meta() == like.is_meta(), d.name, ": ", d.args[i].name, " is on ", t.device(),
                " while ", d.args[static_cast<size_t>(d.device_arg)].name, " is on ", like.device(),
                "; every tensor argument must be on the same device");
  }
}

// The integer arguments whose value is one of `shape`'s extents, e.g. " (max_seq_len=2^62)":
// where a size that cannot be allocated came from.
std::string size_sources(const kit::OpDef& d, const Args& in, const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < d.args.size(); ++i) {
    if (!in[i].isInt()) continue;
    const int64_t v = in[i].toInt();
    if (v > 1 && std::find(shape.begin(), shape.end(), v) != shape.end())
      s += (s.empty() ? " (from " : ", ") + d.args[i].name + "=" + std::to_string(v);
  }
  if (!s.empty()) return s + ")";
  // No size argument gives it: a data-dependent size, read from the integer tensors (offsets,
  // lengths, indices).
  for (size_t i = 0; i < d.args.size(); ++i)
    if (in[i].isTensor() && in[i].toTensor().defined() &&
        !at::isFloatingType(in[i].toTensor().scalar_type()) &&
        in[i].toTensor().scalar_type() != at::kBool)
      s += (s.empty() ? " (sized by the contents of " : ", ") + d.args[i].name;
  return s.empty() ? s : s + ")";
}

// Every output's byte count fits int64 before anything is allocated.
void check_output_sizes(const kit::OpDef& d, const Args& in,
                        const std::vector<kit::OutSpec>& specs) {
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].present) continue;
    int64_t bytes = 0;
    const Status st = checked_nbytes(d.name + ": output " + d.outs[i].name, specs[i].shape,
                                     specs[i].dtype, &bytes);
    if (!st.ok()) check(Status(st.code(), st.message() + size_sources(d, in, specs[i].shape)));
  }
}
// An output's allocation; one that cannot be made (torch's allocator refuses or runs out of
// memory) is an error naming the op, the output, its shape and bytes and the arguments its size
// came from (issue 21), not the allocator's bare message.
at::Tensor allocate_output(const kit::OpDef& d, const Args& in, const kit::OutSpec& spec,
                           const std::string& name, const at::TensorOptions& opts) {
  try {
    return new_output(spec.shape, opts);
  } catch (const c10::Error& e) {
    int64_t bytes = 0;
    (void)checked_nbytes(d.name, spec.shape, spec.dtype, &bytes);  // checked before: fits
    std::string shape;
    for (int64_t x : spec.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(x);
    TORCH_CHECK(false, d.name, ": cannot allocate output ", name, " [", shape, "] (", bytes,
                " bytes on ", opts.device().str(), ")", size_sources(d, in, spec.shape), ": ",
                e.what_without_backtrace());
  }
}
}  // namespace

void run_boxed(const kit::OpDef& d, torch::jit::Stack* stack, const Context& ctx_in, bool meta) {
  const size_t n = d.args.size();
  Args in(std::make_move_iterator(stack->end() - static_cast<std::ptrdiff_t>(n)),
          std::make_move_iterator(stack->end()));
  torch::jit::drop(*stack, n);
  check_meta_devices(d, in);
  std::vector<at::Tensor> outs;
  bool all_concrete = true;
  for (const auto& v : in) all_concrete = all_concrete && concrete(v);
  if (meta && !all_concrete) {
    const TorchHooks& h = hooks(d.name);
    bool all_like = !d.outs.empty();
    for (const auto& o : d.outs) all_like = all_like && !o.like.empty();
    if (h.meta) {
      outs = h.meta(in);
    } else {
      TORCH_CHECK(all_like, d.name,
                  ": this op's Meta kernel needs concrete sizes (no symbolic-shape rule is "
                  "registered for it)");
      for (const auto& o : d.outs) {
        const at::Tensor& t = in[arg_index(d, o.like)].toTensor();
        outs.push_back(o.mutates.empty() ? at::empty_symint(t.sym_sizes(), t.options()) : t);
      }
    }
  } else {
    std::vector<at::Tensor> keep;
    const std::shared_ptr<void> args = to_args(d, in, meta, &keep);
    std::vector<kit::OutSpec> specs;
    check(d.shapes(args.get(), &specs, ctx_in), d.value_errors);
    TORCH_INTERNAL_ASSERT(specs.size() == d.outs.size(), d.name, ": shape function gave ",
                          specs.size(), " outputs, the table lists ", d.outs.size());
    check_output_sizes(d, in, specs);
    const at::Tensor& like = device_tensor(d, in);
    kit::Outputs o;
    for (size_t i = 0; i < specs.size(); ++i) {
      const auto opts = like.options().dtype(to_scalar_type(specs[i].dtype));
      if (!d.outs[i].mutates.empty()) {
        // The argument itself, written in place (the shape function checked its shape).
        outs.push_back(in[arg_index(d, d.outs[i].mutates)].toTensor());
      } else {
        outs.push_back(specs[i].present ? allocate_output(d, in, specs[i], d.outs[i].name, opts)
                                        : at::empty({0}, opts));
      }
      o.present.push_back(specs[i].present);
      o.views.push_back(specs[i].present ? to_view(outs.back(), d.name, d.outs[i].name)
                                         : TensorView{});
    }
    if (!meta) {
      Context ctx = ctx_in;
      at::Tensor workspace;
      if (d.workspace) {
        if (const size_t bytes = d.workspace(args.get(), o); bytes > 0) {
          workspace = advise_fresh(
              at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte)));
          ctx.workspace = workspace.data_ptr();
          ctx.workspace_bytes = bytes;
        }
      }
      check(d.run(args.get(), o, ctx), d.value_errors);
    }
  }
  for (auto& t : outs) torch::jit::push(*stack, std::move(t));
}

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::string user_name(const kit::OpDef& d) {
  return d.python_name.empty() || d.python_name == "-" ? d.name : d.python_name;
}

// The generic autograd function: forward redispatches the op below autograd on the boxed stack;
// backward calls the op's backward (or its hook) with the kept arguments. Its tensor inputs are
// the differentiable arguments that were given (an absent optional one is no input).
class KitFunction : public torch::autograd::Function<KitFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const kit::OpDef* d,
                               const c10::OperatorHandle* op, c10::DispatchKeySet ks,
                               torch::jit::Stack* stack, at::TensorList diff) {
    const size_t n = d->args.size();
    const Args in(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
    const TorchHooks& h = hooks(d->name);
    const Args keep = h.save ? h.save(in) : in;
    // Tensors are saved with version checks; everything else as IValues.
    std::vector<at::Tensor> tensors;
    c10::impl::GenericList rest(c10::AnyType::get());
    std::vector<int64_t> where;
    for (size_t i = 0; i < keep.size(); ++i) {
      if (keep[i].isTensor() && keep[i].toTensor().defined()) {
        tensors.push_back(keep[i].toTensor());
        where.push_back(static_cast<int64_t>(i));
        rest.push_back(c10::IValue());
      } else {
        rest.push_back(keep[i]);
      }
    }
    ctx->saved_data["rest"] = rest;
    ctx->saved_data["where"] = where;
    ctx->saved_data["def"] = reinterpret_cast<int64_t>(d);
    // Which differentiable arguments were given (the absent optional ones are not inputs of
    // this function: apply() takes defined tensors only).
    std::vector<int64_t> given;
    for (size_t i = 0; i < n; ++i)
      if (d->args[i].opts.grad)
        given.push_back(in[i].isTensor() && in[i].toTensor().defined() ? 1 : 0);
    ctx->saved_data["given"] = given;
    const size_t m = d->outs.size();
    variable_list outs;  // every output of the op that ran (save_outputs_from: more than m)
    {
      const at::AutoDispatchBelowADInplaceOrView below;
      if (d->save_outputs_from.empty()) {
        op->redispatchBoxed(ks & c10::after_autograd_keyset, stack);
        for (size_t i = 0; i < m; ++i) outs.push_back((*stack)[stack->size() - m + i].toTensor());
        torch::jit::drop(*stack, m);
      } else {
        outs = call(d->save_outputs_from, in);
        torch::jit::drop(*stack, n);
      }
    }
    // A mutated argument was written below autograd: bump its version (as ADInplaceOrView
    // would) and mark it dirty, so that autograd rebases its history on this node.
    for (size_t i = 0; i < m; ++i) {
      if (d->outs[i].mutates.empty()) continue;
      torch::autograd::impl::bump_version(outs[i]);
      if (d->args[arg_index(*d, d->outs[i].mutates)].opts.grad) ctx->mark_dirty({outs[i]});
    }
    // The saved outputs follow the kept arguments' tensors.
    const kit::OpDef* from = d->save_outputs_from.empty() ? d : kit::find_def(d->save_outputs_from);
    TORCH_INTERNAL_ASSERT(from != nullptr && outs.size() == from->outs.size() && outs.size() >= m,
                          d->name, ": save_outputs_from ", d->save_outputs_from,
                          " gave no outputs that extend this op's");
    for (const auto& name : d->save_outputs) {
      size_t k = 0;
      while (k < from->outs.size() && from->outs[k].name != name) ++k;
      TORCH_INTERNAL_ASSERT(k < from->outs.size(), d->name, ": save_outputs names ", name,
                            ", which is no output of ", from->name);
      tensors.push_back(outs[k]);
    }
    ctx->save_for_backward(tensors);
    outs.resize(m);
    for (size_t i = 0; i < m; ++i)
      if (!d->outs[i].grad) ctx->mark_non_differentiable({outs[i]});
    return outs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto* d = reinterpret_cast<const kit::OpDef*>(ctx->saved_data["def"].toInt());
    for (const auto& g : grads)
      TORCH_CHECK(!(at::GradMode::is_enabled() && g.defined() && g.requires_grad()), user_name(*d),
                  ": double backward is not supported");
    const auto tensors = ctx->get_saved_variables();
    const auto rest = ctx->saved_data["rest"].toList();
    const auto where = ctx->saved_data["where"].toIntVector();
    // The kept arguments, then the saved outputs (OpDef::save_outputs).
    Args saved(rest.begin(), rest.end());
    for (size_t j = 0; j < where.size(); ++j) saved[static_cast<size_t>(where[j])] = tensors[j];
    for (size_t j = where.size(); j < tensors.size(); ++j) saved.emplace_back(tensors[j]);
    std::vector<at::Tensor> gout;  // the differentiable outputs' gradients
    for (size_t i = 0; i < grads.size(); ++i)
      if (d->outs[i].grad) gout.push_back(grads[i]);
    const auto given = ctx->saved_data["given"].toIntVector();
    // needed[j]: the j-th differentiable argument was given and its gradient is wanted. (Bytes,
    // not std::vector<bool>: GCC 13 warned -Warray-bounds inside vector<bool>'s reallocation.)
    std::vector<uint8_t> needed;
    size_t e = 0;  // the edge index among the given ones
    for (int64_t gv : given) needed.push_back(gv && ctx->needs_input_grad(e++) ? 1 : 0);
    const TorchHooks& h = hooks(d->name);
    std::vector<at::Tensor> g;
    if (h.backward) {
      g = h.backward(saved, gout);
    } else {
      Args st(gout.begin(), gout.end());
      for (const auto& v : saved) st.push_back(v);
      size_t k = 0;  // want_d<x> for each optional differentiable tensor
      for (const auto& a : d->args) {
        if (!a.opts.grad) continue;
        if (a.type == kit::ArgType::opt_tensor) st.emplace_back(static_cast<bool>(needed[k]));
        ++k;
      }
      g = call(d->backward, std::move(st));
    }
    TORCH_INTERNAL_ASSERT(g.size() == given.size(), d->name, ": the backward gave ", g.size(),
                          " gradients for ", given.size(), " differentiable arguments");
    // One entry per argument of apply(): d, op, ks, stack, then the given tensors.
    variable_list out = {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    for (size_t j = 0; j < g.size(); ++j)
      if (given[j]) out.push_back(needed[j] ? g[j] : at::Tensor());
    return out;
  }
};

class AutogradKernel final : public c10::OperatorKernel {
 public:
  explicit AutogradKernel(const kit::OpDef* d) : d_(d) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    const size_t n = d_->args.size();
    variable_list diff;  // the differentiable inputs that were given
    bool need = false;
    for (size_t i = 0; i < n; ++i) {
      if (!d_->args[i].opts.grad) continue;
      const c10::IValue& v = (*stack)[stack->size() - n + i];
      if (!v.isTensor() || !v.toTensor().defined()) continue;
      diff.push_back(v.toTensor());
      need = need || diff.back().requires_grad();
    }
    need = need && at::GradMode::is_enabled();
    // The tensors the op writes in place (kit::ArgOpts::mutated).
    std::vector<at::Tensor> mutated;
    for (size_t i = 0; i < n; ++i) {
      const c10::IValue& v = (*stack)[stack->size() - n + i];
      if (!d_->args[i].opts.mutated || !v.isTensor() || !v.toTensor().defined()) continue;
      mutated.push_back(v.toTensor());
      TORCH_CHECK(!(at::GradMode::is_enabled() && mutated.back().is_leaf() &&
                    mutated.back().requires_grad()),
                  "recops.", d_->name, ": argument '", d_->args[i].name,
                  "' is a leaf tensor that requires grad and this op writes it in place; pass a "
                  "copy (e.g. x.clone()) or run under torch.no_grad()");
    }
    if (d_->forward_only && at::GradMode::is_enabled()) {
      for (size_t i = 0; i < n; ++i) {
        const c10::IValue& v = (*stack)[stack->size() - n + i];
        TORCH_CHECK(!(v.isTensor() && v.toTensor().defined() && v.toTensor().requires_grad()),
                    "recops.", d_->name, ": argument '", d_->args[i].name,
                    "' requires grad, but the op is not differentiable (forward-only); detach "
                    "the inputs or run under torch.no_grad()");
      }
    }
    if (!need) {
      {
        const at::AutoDispatchBelowADInplaceOrView below;
        op.redispatchBoxed(ks & c10::after_autograd_keyset, stack);
      }
      for (const auto& t : mutated) torch::autograd::impl::bump_version(t);
      return;
    }
    TORCH_CHECK(!d_->backward.empty() || hooks(d_->name).backward, user_name(*d_),
                ": no gradient is defined for this op");
    // forward pops the arguments (the redispatch) and the outputs; they come back from apply
    // with their history set.
    variable_list outs = KitFunction::apply(d_, &op, ks, stack, at::TensorList(diff));
    for (auto& t : outs) torch::jit::push(*stack, std::move(t));
  }

 private:
  const kit::OpDef* d_;
};

// The CPU and Meta kernels: the shared body on CPU threads, or shapes only.
class HostKernel final : public c10::OperatorKernel {
 public:
  HostKernel(const kit::OpDef* d, bool meta) : d_(d), meta_(meta) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) {
    run_boxed(*d_, stack, meta_ ? Context{} : cpu_context(), meta_);
  }

 private:
  const kit::OpDef* d_;
  bool meta_;
};

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

void set_validate(bool on) {
  recops::set_validate(on);
}

// {"<arg>": {"def", "kw", "names", ...}} for the arguments with a Python face (kit::PyArg).
std::string py_faces(const kit::OpDef& d) {
  std::ostringstream o;
  o << "{";
  bool first = true;
  for (const auto& a : d.args) {
    const kit::PyArg& p = a.opts.py;
    std::string f;
    for (const auto& [key, val] : {std::pair{"def", p.def},
                                   {"names", p.names},
                                   {"pair", p.pair},
                                   {"rule", p.rule},
                                   {"needed_with", p.needed_with},
                                   {"why", p.why}})
      if (val) f += std::string(f.empty() ? "" : ",") + json_str(key) + ":" + json_str(val);
    if (p.kw) f += std::string(f.empty() ? "" : ",") + "\"kw\":true";
    if (f.empty()) continue;
    o << (first ? "" : ",") << json_str(a.name) << ":{" << f << "}";
    first = false;
  }
  o << "}";
  return o.str();
}

// The names of the arguments that receive a gradient (ArgOpts::grad), as a JSON list.
std::string grad_args(const kit::OpDef& d) {
  std::string o;
  for (const auto& a : d.args)
    if (a.opts.grad) o += (o.empty() ? "" : ",") + json_str(a.name);
  return "[" + o + "]";
}

// The names of the outputs (OutDef::name), in order, as a JSON list.
std::string out_names(const kit::OpDef& d) {
  std::string o;
  for (const auto& x : d.outs) o += (o.empty() ? "" : ",") + json_str(x.name);
  return "[" + o + "]";
}

// [{"name", "family", "python_name", "doc", "backward", "py", "grad", "outs"}, ...] for
// python/recops/_kit.py (and recops.testing, which marks the "grad" arguments requires_grad).
std::string kit_ops() {
  std::ostringstream o;
  o << "[";
  bool first = true;
  for (const auto& d : kit::registry().defs) {
    o << (first ? "" : ",") << "{\"name\":" << json_str(d.name)
      << ",\"family\":" << json_str(d.family) << ",\"python_name\":" << json_str(d.python_name)
      << ",\"doc\":" << json_str(d.doc) << ",\"backward\":" << json_str(d.backward)
      << ",\"py\":" << py_faces(d) << ",\"grad\":" << grad_args(d) << ",\"outs\":" << out_names(d)
      << "}";
    first = false;
  }
  o << "]";
  return o.str();
}
}  // namespace

}  // namespace recops::binding

namespace {
// at::Tag::inplace exists from some torch 2.1x on (2.13 has it, the H200's 2.11 does not); an
// older torch registers the op without it and functionalizes it by its (a!) schema alone.
template <class T>
void add_inplace_tag(std::vector<T>& tags) {
  if constexpr (requires { T::inplace; }) tags.push_back(T::inplace);
}
}  // namespace

// The one library block: every op's schema from its table, the kit's table for Python, and the
// validation switch.
TORCH_LIBRARY(recops, m) {
  for (const auto& d : recops::kit::registry().defs) {
    std::vector<at::Tag> tags = {at::Tag::pt2_compliant_tag};
    // An op that writes its first argument in place and returns it (add_'s form): torch.compile
    // functionalizes it by this tag (auto_functionalize).
    if (d.outs.size() == 1 && !d.args.empty() && d.args[0].opts.mutated &&
        d.outs[0].mutates == d.args[0].name)
      add_inplace_tag(tags);
    const std::vector<at::Tag>& const_tags = tags;  // def's tags overload takes a const ref
    m.def(d.schema().c_str(), const_tags);
  }
  m.def("_kit_ops() -> str", &recops::binding::kit_ops);
  // Offsets validation of CUDA calls (jagged_ops.md §1.2); the CPU always validates.
  m.def("set_validate(bool on) -> ()", &recops::binding::set_validate);
}

TORCH_LIBRARY_IMPL(recops, CPU, m) {
  for (const auto& d : recops::kit::registry().defs)
    m.impl(d.name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                               std::make_unique<recops::binding::HostKernel>(&d, false)));
}

TORCH_LIBRARY_IMPL(recops, Meta, m) {
  for (const auto& d : recops::kit::registry().defs)
    if (!d.fake_in_python)
      m.impl(d.name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                                 std::make_unique<recops::binding::HostKernel>(&d, true)));
}

// An op without tensor arguments: a call dispatches on no backend, so its one kernel is
// CompositeExplicitAutograd (the CPU body).
TORCH_LIBRARY_IMPL(recops, CompositeExplicitAutograd, m) {
  for (const auto& d : recops::kit::registry().defs)
    if (!recops::binding::has_tensor_args(d))
      m.impl(d.name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                                 std::make_unique<recops::binding::HostKernel>(&d, false)));
}

TORCH_LIBRARY_IMPL(recops, Autograd, m) {
  for (const auto& d : recops::kit::registry().defs)
    m.impl(d.name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                               std::make_unique<recops::binding::AutogradKernel>(&d)));
}
