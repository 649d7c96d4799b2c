// tools/recops/casefile.h: the `cases.yaml` / `perf.yaml` format (docs/cases.md), parsed into
// typed case specs. Torch-free and separate from the drivers so that the fuzzer links it alone.
//
// Every error names the file, the line and column (1-based), the case id when known and the
// field: `src/ops/x/cases.yaml:12:5: case 'b37': field 'E': expected a list of integers >= 0`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tolerance.h"
#include "recops/dtype.h"

namespace recops::cli {

// A case-file error with its location already in the message.
class CaseFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a value came from (1-based line and column; 0 when unknown).
struct Loc {
  int line = 0;
  int column = 0;
};

// Lengths: an explicit list, or a generator (docs/cases.md "Length generators").
struct LengthsSpec {
  std::string gen;  // "" for an explicit list; uniform|skewed|empty|all_max|range
  std::vector<int64_t> explicit_lengths;
  int64_t B = 0;
  int64_t max = 0;
  int64_t lo = 0, hi = 0;  // gen: range
};

// A typed `args:` value (the op's scalar arguments by name; the op's driver declares the keys
// and their kinds, OpSchema::args).
enum class ArgKind { integer, number, boolean, text, int_list };
struct ArgValue {
  ArgKind kind = ArgKind::integer;
  int64_t i = 0;
  double f = 0;  // also set for integers
  bool b = false;
  std::string s;
  std::vector<int64_t> list;
  Loc loc;
};

// One case (or one perf shape) as written. Optional fields are unset when absent; list-valued
// dtype-like fields expand into one row each (see expand()).
struct CaseSpec {
  std::string id;
  Loc loc;                       // of the case's mapping
  std::vector<std::string> ops;  // `op:` override (a list expands); empty = file op
  uint64_t seed = 0;
  std::vector<DType> dtypes;          // empty = the driver's default
  std::vector<DType> offsets_dtypes;  // empty = int64
  std::vector<DType> out_dtypes;      // empty = the input's dtype
  std::optional<LengthsSpec> lengths;
  std::optional<std::vector<int64_t>> offsets;        // explicit (possibly invalid) offsets
  std::optional<std::vector<int64_t>> offsets_shape;  // reshape of the offsets (bad inputs)
  std::vector<int64_t> E;                             // trailing dims (default none)
  std::optional<int64_t> max_seq_len;
  std::optional<double> padding_value;
  int64_t row_pad = 0;             // extra elements between rows: non-contiguous input
  std::optional<int64_t> S;        // dense_to_jagged: dense extent
  std::optional<int64_t> total_L;  // rows of the jagged tensor, when not offsets[B]
  std::optional<std::vector<int64_t>> out_shape;     // a deliberately wrong output shape
  std::optional<std::vector<int64_t>> shape;         // input shape (cumsum)
  std::optional<std::pair<int64_t, int64_t>> range;  // integer input range [lo, hi]
  double scale = 1.0;                                // floating inputs: uniform(-1, 1) * scale
  std::set<std::string> tags;                        // `large`: skipped by --quick
  std::map<std::string, ArgValue> args;              // `args:` (typed by the op's driver)
  std::set<std::string> backends;                    // empty = every backend
  std::optional<std::string> expect_error;           // pass when the op fails with this text
  bool deterministic = true;
  std::string note;
  // perf.yaml: the most memory one call may add at its peak (outputs, workspace and anything the
  // op allocates), as a factor of the output bytes and/or in bytes; `bench` enforces it.
  std::optional<double> max_memory_x_output;
  std::optional<int64_t> max_memory_bytes;
};

// A baseline of one perf shape on one device.
struct Baseline {
  double time_ms = 0;
  std::string commit;
  std::string date;
};

struct CaseFile {
  std::string path;
  std::string op;  // the file's op (the folder's main op)
  core::Standard standard = core::Standard::exact;
  // `nonfinite:` (core::NonfiniteRule): one rule for every op of the file, or a rule per op
  // (ops not named: exact), or per op and backend ({op: {cpu: exact, cuda: covers}}). Keys: "" (the
  // file), "op", "op@cpu", "op@cuda".
  std::map<std::string, core::NonfiniteRule> nonfinite;
  core::NonfiniteRule nonfinite_of(const std::string& op, const std::string& backend = "") const {
    for (const std::string& key : {op + "@" + backend, op, std::string()}) {
      auto it = nonfinite.find(key);
      if (it != nonfinite.end()) return it->second;
    }
    return core::NonfiniteRule::exact;
  }
  std::vector<CaseSpec> cases;  // `cases:` (cases.yaml) or `shapes:` (perf.yaml)
  // perf.yaml: device name -> key ("op/id/dtype") -> baseline.
  std::map<std::string, std::map<std::string, Baseline>> baselines;
  int baselines_line = 0;  // 1-based line of `baselines:` (0 = absent)
};

// Which ops a file may name and which fields beyond the common ones each op takes.
struct OpSchema {
  std::string folder;            // src/ops/<folder>
  std::set<std::string> fields;  // op-specific fields
  // The keys of `args:` and their kinds.
  std::map<std::string, ArgKind> args = {};
  // The tags the op's driver reads (the part before '=' of `name=value` tags), besides the
  // common `large`; std::nullopt: not declared, any tag is taken.
  std::optional<std::set<std::string>> tags = std::nullopt;
};
struct CaseSchema {
  std::map<std::string, OpSchema> ops;
};

// The fields every case may use.
const std::set<std::string>& common_fields();

enum class FileKind { cases, perf };

// Parses YAML text. Throws CaseFileError (never anything else) on any problem.
CaseFile parse_case_text(const std::string& text, const std::string& path, FileKind kind,
                         const CaseSchema& schema);
// Reads and parses a file.
CaseFile load_case_file(const std::string& path, FileKind kind, const CaseSchema& schema);

// One concrete row of a case: the case with each list-valued choice fixed.
struct CaseRow {
  const CaseSpec* spec = nullptr;
  std::string op;
  std::optional<DType> dtype;  // unset: the driver's default
  DType offsets_dtype = DType::int64;
  std::optional<DType> out_dtype;  // unset: the input's dtype
};

// Expands a file's cases into rows (ops x dtypes x offsets_dtypes x out_dtypes).
std::vector<CaseRow> expand(const CaseFile& f);

// "op/id/dtype": the key of a perf shape's baseline.
std::string baseline_key(const std::string& op, const std::string& id, DType dtype);

}  // namespace recops::cli
