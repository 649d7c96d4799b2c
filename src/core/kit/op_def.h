// core/kit/op_def.h: the op kit's description of one operator, torch-free.
//
// An op folder describes each of its ops once, in its entry: the implementation list (OpInfo, for
// `recops list`) and an OpDef, the argument table. The table binds every schema argument to a
// member of the op's Args struct (its C++ API) and says which tensors are differentiable; the
// op's shape and run functions work on that struct. From the table the PyTorch binding derives
// the schema string, the torch -> TensorView conversion, the CPU/CUDA/Meta kernels, the autograd
// save/restore and the Python wrapper (src/torch/kit.cpp, python/recops/_kit.py): its signature,
// its docstring and, where the Python face differs from the schema (ArgOpts::py: a string enum, a
// tuple of two ints, a default read from the data), the conversion. An argument is written once:
// in the struct, and once more in the table that names it.
//
//   struct ScaleArgs { TensorView x; double factor = 1.0; };
//   kit::Def<ScaleArgs>("demo_scale", "demo")
//       .arg<&ScaleArgs::x>("x", {.grad = true})
//       .arg<&ScaleArgs::factor>("factor", {.def = "1.0"})
//       .out("out").shapes(scale_shapes).run(scale_run).backward("demo_scale_bwd");
//
// Registration: the entry ends with RECOPS_REGISTER_OPS(reg) { reg.add(...); }; CMake writes a
// manifest that calls every op folder's function (src/core/kit/registry.cpp), so no shared file
// names any op.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "recops/context.h"
#include "recops/registry.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::kit {

// How an argument travels: the schema type and the C++ member type it fills.
enum class ArgType : uint8_t {
  tensor,       // Tensor            <-> TensorView
  opt_tensor,   // Tensor?           <-> std::optional<TensorView>
  int64,        // int / SymInt      <-> int64_t (or an enum)
  opt_int64,    // int? / SymInt?    <-> std::optional<int64_t>
  float64,      // float             <-> double
  opt_float64,  // float?            <-> std::optional<double>
  boolean,      // bool              <-> bool
  opt_dtype,    // ScalarType?       <-> std::optional<DType>
};

// The Python wrapper's face of an argument where it differs from the schema's (the raw op keeps
// the schema; python/recops/_kit.py writes the wrapper from these). Unset fields: as the schema.
struct PyArg {
  const char* def = nullptr;  // the wrapper's default, a Python literal ("None")
  bool kw = false;            // keyword-only in the wrapper, from this argument on
  // An int (enum) argument taken as one of these space-separated names; the value is the name's
  // position, the default the name at the schema default. Another string is a ValueError.
  const char* names = nullptr;
  // This int and the next argument are one tuple argument of this name (default: both defaults).
  const char* pair = nullptr;
  // A None is filled by a named rule of _kit.py: "same <arg>" (that argument's value) or
  // "longest <offsets> <tensor> <dim>" (the longest sequence of <offsets>; without offsets,
  // <tensor>.size(<dim>)); "nested <values>" / "nested_out <values>" on an offsets argument: a
  // torch.nested jagged tensor in <values> gives both (nested_out: the output comes back nested).
  // Rules run in argument order, after the names checks.
  const char* rule = nullptr;
  // A None while argument `needed_with` is given is a ValueError "<wrapper>: <why>".
  const char* needed_with = nullptr;
  const char* why = nullptr;
};

// Per-argument options (designated initialisers: {.def = "0.0", .kw = true}).
struct ArgOpts {
  const char* def = nullptr;  // schema default ("0.0", "None", "True"); nullptr: required
  bool kw = false;            // keyword-only (after `*` in the schema)
  bool sym = false;           // an int that is a SymInt in the schema (a size)
  bool grad = false;          // a tensor that receives a gradient from the backward op
  // Tensors: the binding copies a tensor whose dims [dense_from, ndim) are not laid out densely
  // (-1: never; a negative value below -1 counts from the end, -2 = the last dim).
  int dense_from = -1;
  // ... and only when the tensor has more than this many dims (-1: any tensor), e.g. 1 for an op
  // that takes a 1-D tensor with any stride but scans a larger one flattened.
  int dense_if_ndim_gt = -1;
  // A tensor the op writes in place: the schema says `Tensor(a!)` (a, b, ... in argument order),
  // and an output of Def::out_mutated returns it. The binding never copies it (dense_from must
  // stay -1: the entry takes its layout or refuses it) and bumps its version after the call.
  bool mutated = false;
  PyArg py = {};  // the Python wrapper's face (see PyArg)
};

struct ArgDef {
  std::string name;
  ArgType type = ArgType::tensor;
  ArgOpts opts;
  void* (*member)(void* call) = nullptr;  // the Args member this argument fills
  // int arguments: stores the value into the member (an int64_t or an enum); false when it does
  // not fit the member's type (an enum's underlying type).
  bool (*set_int)(void* call, int64_t v) = nullptr;
};

struct OutDef {
  std::string name;
  bool grad = true;  // differentiable output (its gradient is an input of the backward op)
  // The argument whose sizes and dtype this output always has ("" = none): lets the binding's
  // Meta kernel answer symbolic (dynamic-shape) sizes without a hook.
  std::string like;
  // The mutated argument (ArgOpts::mutated) this output is ("" = a new tensor): the binding
  // allocates nothing and returns the argument itself, written in place; the schema's return
  // carries the argument's alias annotation.
  std::string mutates;
};

// What the binding allocates for one output.
struct OutSpec {
  Shape shape;
  DType dtype = DType::fp32;
  bool present = true;  // false: not produced this call (the binding returns an empty [0] tensor)
};

// The outputs the binding allocated, in the table's order.
struct Outputs {
  std::vector<TensorView> views;
  std::vector<bool> present;
  const TensorView* get(size_t i) const { return present[i] ? &views[i] : nullptr; }
};

struct OpDef {
  std::string name;    // the schema name, the CLI's --op, the case files' key
  std::string family;  // the folder above the op's folder, e.g. "jagged"
  // The Python wrapper: its name ("" = the op's name; "-" = no wrapper) and its docstring.
  std::string python_name;
  std::string doc;
  std::vector<ArgDef> args;
  std::vector<OutDef> outs;
  // The backward op ("" = not differentiable). It takes the gradients of the outputs, then the
  // forward arguments in order, then `bool want_d<x>` for each optional differentiable tensor x;
  // it returns one gradient per differentiable argument, in order.
  std::string backward;
  // Outputs the Autograd kernel saves for the backward, by name (Def::save_outputs). They follow
  // the saved arguments: in the `saved` of a backward hook, and as arguments of the backward op
  // before the want_d<x> flags. With save_outputs_from set, they are outputs of that op, which
  // the Autograd kernel then runs instead of this one (see Def::save_outputs).
  std::vector<std::string> save_outputs;
  std::string save_outputs_from;
  // The op's torch-free halves, type-erased over one call's state (kit::Call: the Args struct and
  // the op's Plan, what the shape function validated and the run reuses, so that every check
  // runs once per call).
  std::function<std::shared_ptr<void>()> new_call;
  // The outputs' shapes (ctx: the call's, for the few ops whose shape reads a device value; a
  // Meta call passes a default Context and must not read data).
  std::function<Status(void* call, std::vector<OutSpec>* outs, const Context& ctx)> shapes;
  std::function<Status(const void* call, const Outputs& outs, const Context& ctx)> run;
  // Scratch bytes on the tensors' device (nullptr: none).
  std::function<size_t(const void* call, const Outputs& outs)> workspace;
  // The index of the argument whose device and dtype the outputs follow (default: the first
  // tensor). An op without tensor arguments runs on the CPU (the binding registers it as
  // CompositeExplicitAutograd, the only kernel a call without tensors reaches).
  int device_arg = 0;
  bool fake_in_python = false;  // see Def::fake_in_python
  bool value_errors = false;    // see Def::value_errors
  bool forward_only = false;    // see Def::forward_only

  std::string schema() const;  // "name(Tensor x, float factor=1.0) -> Tensor"
};

// An op with nothing to carry from its shape function to its run.
struct NoPlan {};

// One call's state: the arguments and the plan.
template <class Args, class Plan>
struct Call {
  Args args;
  Plan plan;
};

namespace detail {
template <class T>
struct MemberOf;
template <class C, class M>
struct MemberOf<M C::*> {
  using Class = C;
  using Type = M;
};

// M may be a member of Args or of a base of Args (several ops sharing one argument list).
template <class CallT, auto M>
void* member_ptr(void* c) {
  return &(static_cast<CallT*>(c)->args.*M);
}

template <class T>
bool fits(int64_t v) {
  if constexpr (std::is_enum_v<T>) {
    using U = std::underlying_type_t<T>;
    return v >= static_cast<int64_t>(std::numeric_limits<U>::min()) &&
           static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<U>::max());
  } else {
    return true;
  }
}

template <class CallT, auto M>
bool set_int(void* c, int64_t v) {
  using T = typename MemberOf<decltype(M)>::Type;
  if (!fits<T>(v)) return false;
  static_cast<CallT*>(c)->args.*M = static_cast<T>(v);
  return true;
}

template <class M>
constexpr ArgType arg_type() {
  if constexpr (std::is_same_v<M, TensorView>)
    return ArgType::tensor;
  else if constexpr (std::is_same_v<M, std::optional<TensorView>>)
    return ArgType::opt_tensor;
  else if constexpr (std::is_same_v<M, bool>)
    return ArgType::boolean;
  else if constexpr (std::is_same_v<M, int64_t> || std::is_enum_v<M>)
    return ArgType::int64;
  else if constexpr (std::is_same_v<M, std::optional<int64_t>>)
    return ArgType::opt_int64;
  else if constexpr (std::is_same_v<M, double>)
    return ArgType::float64;
  else if constexpr (std::is_same_v<M, std::optional<double>>)
    return ArgType::opt_float64;
  else if constexpr (std::is_same_v<M, std::optional<DType>>)
    return ArgType::opt_dtype;
  else
    static_assert(sizeof(M) == 0, "kit: unsupported argument member type");
}
}  // namespace detail

// The typed builder of an OpDef over an Args struct (and the op's Plan, see OpDef::new_call).
template <class Args, class Plan = NoPlan>
class Def {
  using CallT = Call<Args, Plan>;
  static const Args& args_of(const void* c) { return static_cast<const CallT*>(c)->args; }

 public:
  Def(std::string name, std::string family) {
    d_.name = std::move(name);
    d_.family = std::move(family);
    d_.new_call = [] { return std::shared_ptr<void>(std::make_shared<CallT>()); };
  }
  template <auto M>
  Def& arg(const char* name, ArgOpts o = {}) {
    using T = typename detail::MemberOf<decltype(M)>::Type;
    static_assert(std::is_base_of_v<typename detail::MemberOf<decltype(M)>::Class, Args>,
                  "kit: the member belongs to another struct");
    ArgDef a;
    a.name = name;
    a.type = detail::arg_type<T>();
    a.opts = o;
    a.member = &detail::member_ptr<CallT, M>;
    if constexpr (std::is_same_v<T, int64_t> || std::is_enum_v<T>)
      a.set_int = &detail::set_int<CallT, M>;
    d_.args.push_back(std::move(a));
    return *this;
  }
  Def& out(const char* name, bool grad = true) {
    d_.outs.push_back({name, grad, "", ""});
    return *this;
  }
  // An output with the sizes and dtype of argument `like` (see OutDef::like).
  Def& out_like(const char* name, const char* like, bool grad = true) {
    d_.outs.push_back({name, grad, like, ""});
    return *this;
  }
  // An output that is the mutated argument `arg` itself after the call (OutDef::mutates); the
  // shape function gives it the argument's shape and dtype.
  Def& out_mutated(const char* name, const char* arg, bool grad = true) {
    d_.outs.push_back({name, grad, arg, arg});
    return *this;
  }
  Def& doc(std::string python_name, std::string text) {
    d_.python_name = std::move(python_name);
    d_.doc = std::move(text);
    return *this;
  }
  Def& backward(std::string name) {
    d_.backward = std::move(name);
    return *this;
  }
  // The Autograd kernel saves these outputs for the backward (with version checks), e.g. a
  // softmax's lse, so that the backward need not recompute them. With `from`, they are outputs
  // of op `from`, which takes the same arguments and returns this op's outputs first, then more:
  // when a gradient is needed the Autograd kernel runs `from` and returns its first outputs.
  Def& save_outputs(std::vector<std::string> names, std::string from = "") {
    d_.save_outputs = std::move(names);
    d_.save_outputs_from = std::move(from);
    return *this;
  }
  Def& device_arg(int i) {
    d_.device_arg = i;
    return *this;
  }
  Def& shapes(Status (*f)(const Args&, std::vector<OutSpec>*)) {
    d_.shapes = [f](void* c, std::vector<OutSpec>* o, const Context&) { return f(args_of(c), o); };
    return *this;
  }
  Def& shapes(Status (*f)(const Args&, std::vector<OutSpec>*, const Context&)) {
    d_.shapes = [f](void* c, std::vector<OutSpec>* o, const Context& ctx) {
      return f(args_of(c), o, ctx);
    };
    return *this;
  }
  // One output: its shape from the op's shape function `F` (Status F(const Args&, Shape*)), its
  // dtype that of the TensorView argument `M`.
  template <auto F, auto M>
  Def& shapes_from() {
    return shapes(+[](const Args& a, std::vector<OutSpec>* o) {
      Shape s;
      RECOPS_RETURN_IF_ERROR(F(a, &s));
      o->push_back({s, (a.*M).dtype});
      return Status::Ok();
    });
  }
  // One output with the shape and dtype of the TensorView argument `M`.
  template <auto M>
  Def& shapes_like() {
    return shapes(+[](const Args& a, std::vector<OutSpec>* o) {
      o->push_back({(a.*M).shape(), (a.*M).dtype});
      return Status::Ok();
    });
  }
  // With a plan: the shape function validates once and keeps what the run needs.
  Def& shapes(Status (*f)(const Args&, Plan*, std::vector<OutSpec>*)) {
    d_.shapes = [f](void* c, std::vector<OutSpec>* o, const Context&) {
      auto* call = static_cast<CallT*>(c);
      return f(call->args, &call->plan, o);
    };
    return *this;
  }
  Def& run(Status (*f)(const Args&, const Outputs&, const Context&)) {
    d_.run = [f](const void* c, const Outputs& o, const Context& ctx) {
      return f(args_of(c), o, ctx);
    };
    return *this;
  }
  // The run of an op with one output: its entry `F` (Status F(const Args&, const TensorView& out,
  // const Context&)).
  template <auto F>
  Def& run_one() {
    return run(
        +[](const Args& a, const Outputs& o, const Context& ctx) { return F(a, o.views[0], ctx); });
  }
  Def& run(Status (*f)(const Args&, const Plan&, const Outputs&, const Context&)) {
    d_.run = [f](const void* c, const Outputs& o, const Context& ctx) {
      const auto* call = static_cast<const CallT*>(c);
      return f(call->args, call->plan, o, ctx);
    };
    return *this;
  }
  Def& workspace(size_t (*f)(const Args&, const Outputs&)) {
    d_.workspace = [f](const void* c, const Outputs& o) { return f(args_of(c), o); };
    return *this;
  }
  // The op's Meta (fake) kernel is registered from Python (an op folder's module, with
  // torch.library.register_fake), e.g. to create an unbacked size; the kit registers none.
  Def& fake_in_python() {
    d_.fake_in_python = true;
    return *this;
  }
  // A failed Status (other than not_implemented and type_error) raises ValueError in Python
  // instead of RuntimeError, for ops whose spec says so.
  Def& value_errors() {
    d_.value_errors = true;
    return *this;
  }
  // The op has no gradient: with grad mode on, an input that requires grad is an error naming the
  // argument (rather than outputs that silently drop its gradient).
  Def& forward_only() {
    d_.forward_only = true;
    return *this;
  }
  operator OpDef() const { return d_; }
  const OpDef& def() const { return d_; }

 private:
  OpDef d_;
};

// Everything the op folders registered.
struct Registry {
  std::vector<OpInfo> infos;
  std::vector<OpDef> defs;
  void add(OpInfo info) { infos.push_back(std::move(info)); }
  void add(OpDef def) { defs.push_back(std::move(def)); }
};
const Registry& registry();
// The OpDef named `name`, or nullptr.
const OpDef* find_def(const std::string& name);

}  // namespace recops::kit

// The one registration function of an op folder. CMake defines RECOPS_OP_FOLDER_ID (the folder
// path with '/' -> '_') for the folder's sources and lists every folder in the manifest.
#define RECOPS_KIT_CAT2(a, b) a##b
#define RECOPS_KIT_CAT(a, b) RECOPS_KIT_CAT2(a, b)
#define RECOPS_REGISTER_OPS(reg) \
  void RECOPS_KIT_CAT(recops_register_, RECOPS_OP_FOLDER_ID)(::recops::kit::Registry & reg)
