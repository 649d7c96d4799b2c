// tools/recops/driver.h: what the CLI needs from each op (one driver per op folder):
// build a case's inputs, call the public entry, describe the outputs, and count bytes and FLOPs.
// check, bench (and later tune, record, compare) are written once against this interface.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor.h"
#include "tools/recops/casefile.h"
#include "tools/recops/judge.h"

namespace recops::cli {

// One input: its own buffer and a (possibly strided) view into it.
struct Input {
  std::string name;
  Tensor buf;       // contiguous storage
  TensorView view;  // what the op sees; data points into buf
};

struct Output {
  std::string name;
  Shape shape;
  DType dtype;
  // The input this output is (>= 0: an op that writes that input in place, kit::ArgOpts::mutated):
  // the op gets the same view as the input and as the output, and the output is that view's
  // values after the call. alloc_outputs gives it the input's values (contiguous); run_poisoned
  // keeps the input's layout, poisons the rest of its buffer and fails a run that writes there.
  int mutates = -1;
};

// A materialised case on the host.
struct Problem {
  std::string op;
  DType dtype = DType::fp32;  // the case's dtype (of the data input)
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  // Scalar arguments (each driver uses what its op takes).
  int64_t max_seq_len = 0;
  double padding_value = 0;
  // Any other scalar argument, by its name in the op's argument table (filled by make, read by
  // run; new drivers use this rather than adding fields here).
  std::map<std::string, double> scalars;
  // Set when the op's shape function already refused the problem (the binding would raise the
  // same error before allocating): the case's result is this error.
  Status shape_error;
  // The seq_offsets values of jagged cases (host copy, for byte counts and tables).
  std::vector<int64_t> offsets;
  // A compact description of the sizes for tables and JSON ({"B":37,"max_L":64,...}).
  std::vector<std::pair<std::string, int64_t>> sizes;
};

// The bytes of one set of p's tensors: its inputs' buffers and its outputs at their shapes (what
// bench and tune rotate copies of; the fuzz harness's size bound).
double set_bytes(const Problem& p);

// Input views moved to another device (same offsets and strides within each buffer).
std::vector<Input> inputs_on(const std::vector<Input>& in, Device dev);

class Driver {
 public:
  virtual ~Driver() = default;
  // Op names this driver serves and the folder of their case files.
  virtual std::vector<std::string> ops() const = 0;
  virtual std::string folder() const = 0;
  // Case fields beyond common_fields() the op understands.
  virtual std::set<std::string> fields(const std::string& op) const = 0;
  // The keys of a case's `args:` map and their kinds (the op's scalar arguments by name).
  virtual std::map<std::string, ArgKind> args(const std::string& op) const { return {}; }
  // The tags the driver reads (the part before '=' of `name=value`); unknown ones are refused
  // with the file, line and tag. std::nullopt: undeclared (any tag is taken).
  virtual std::optional<std::set<std::string>> tags(const std::string& op) const {
    return std::nullopt;
  }
  // The dtype of a case that gives none.
  virtual DType default_dtype(const std::string& op) const = 0;

  // Builds host inputs and output shapes for a row. Errors are problems of the case itself
  // (a bad case file); refusals by the op's shape function go into p->shape_error.
  virtual Status make(const CaseRow& row, Problem* p) const = 0;
  // Calls the op's public entry on `in` (any device), writing `out`.
  virtual Status run(const Problem& p, const std::vector<TensorView>& in,
                     const std::vector<TensorView>& out, const Context& ctx) const = 0;
  // Scratch bytes the entry needs on `in`'s device (the CLI allocates it).
  virtual size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                                 const std::vector<TensorView>& out) const {
    return 0;
  }
  // The golden outputs on the host. Default: the `reference` implementation in the op's dtype
  // on CPU copies of the inputs (exact for data movement and integer ops). Ops judged by the
  // single or double standard override it with the fp64 golden.
  virtual Status golden(const Problem& p, std::vector<Tensor>* out) const;
  // The double standard's plain same-precision baseline; only ops using it override this.
  virtual Status baseline(const Problem& p, std::vector<Tensor>* out) const {
    return Status(StatusCode::not_implemented,
                  "this op has no plain baseline (not a double-standard op)");
  }
  // Ops whose accuracy rule is none of accuracy.md's standards (the Stem indexer's set comparison
  // with boundary ties, stem_prepare's 1-ulp rule) judge all their host outputs against the
  // golden here, unwritten (poisoned) elements included; std::nullopt = the file's standard.
  virtual std::optional<Judgement> judge_outputs(const Problem& p, const std::vector<Tensor>& out,
                                                 const std::vector<Tensor>& gold) const {
    return std::nullopt;
  }
  // The byte floor (jagged_ops.md §6.1) and FLOPs (< 0: not meaningful) of one call.
  virtual double bytes(const Problem& p) const = 0;
  virtual double flops(const Problem& p) const { return -1; }

 protected:
  // The start of make(): sets p->op and p->dtype (the row's, else default_dtype). With
  // `shape_what`, a case without `shape` is refused: "needs `shape` (<shape_what>)".
  Status begin_make(const CaseRow& row, Problem* p, const char* shape_what = nullptr) const;
};

// A driver whose ops, folder, fields, args, tags and default dtype are fixed at construction and
// the same for every op it serves.
class FixedDriver : public Driver {
 public:
  struct Spec {
    std::vector<std::string> ops;
    std::string folder;
    std::set<std::string> fields;
    DType dtype;
    std::map<std::string, ArgKind> args = {};
    std::set<std::string> tags = {};  // the tags read (any other is refused)
  };
  explicit FixedDriver(Spec s) : s_(std::move(s)) {}
  std::vector<std::string> ops() const override { return s_.ops; }
  std::string folder() const override { return s_.folder; }
  std::set<std::string> fields(const std::string&) const override { return s_.fields; }
  std::map<std::string, ArgKind> args(const std::string&) const override { return s_.args; }
  std::optional<std::set<std::string>> tags(const std::string&) const override { return s_.tags; }
  DType default_dtype(const std::string&) const override { return s_.dtype; }

 private:
  Spec s_;
};

// Every driver, ordered by folder (src/ops/<family>/<op>).
const std::vector<std::unique_ptr<Driver>>& drivers();

// Self-registration: a driver file in an op folder ends with RECOPS_REGISTER_DRIVER(MyDriver);
// (the CLI compiles every src/ops/**/driver*.cpp into the executable, so the registrar runs).
struct DriverRegistrar {
  explicit DriverRegistrar(std::unique_ptr<Driver> (*make)());
};
#define RECOPS_DRIVER_CAT2(a, b) a##b
#define RECOPS_DRIVER_CAT(a, b) RECOPS_DRIVER_CAT2(a, b)
#define RECOPS_REGISTER_DRIVER(Type)                                                     \
  static const ::recops::cli::DriverRegistrar RECOPS_DRIVER_CAT(driver_reg_, __LINE__) { \
    +[]() -> std::unique_ptr<::recops::cli::Driver> { return std::make_unique<Type>(); } \
  }
// The driver of `op`, or nullptr.
const Driver* driver_for(const std::string& op);
// The case-file schema built from every driver.
CaseSchema case_schema();

// Allocates a problem's outputs on `dev` (contiguous); an output that mutates an input holds
// that input's values.
std::vector<Tensor> alloc_outputs(const Problem& p, Device dev);
std::vector<TensorView> views(const std::vector<Input>& in);
std::vector<TensorView> views(const std::vector<Tensor>& t);

// One run of the op on `dev` (inputs `dev_in` already there) into outputs poisoned with
// `poison_variant`, with `base`'s settings, workspace allocated; the outputs come back on the host.
struct RunOut {
  Status status;
  std::vector<Tensor> host_out;
  std::string impl_used;
};
RunOut run_poisoned(const Driver& d, const Problem& p, const std::vector<Input>& dev_in, Device dev,
                    const Context& base, int poison_variant);

// The byte floor of a call that reads every input once and writes every output once.
double io_bytes(const Problem& p);

}  // namespace recops::cli
