// tests/fuzz/fuzz_casefile.cpp: any text through the case-file parser must give either a parsed
// file or a CaseFileError (never a crash, a hang, another exception or undefined behaviour); a
// parsed file must expand and generate its lengths.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/recops/casefile.h"
#include "tools/recops/gen.h"

namespace {
const recops::cli::CaseSchema& schema() {
  static const recops::cli::CaseSchema s = [] {
    recops::cli::CaseSchema c;
    const std::set<std::string> jagged = {
        "lengths", "offsets",     "offsets_dtype", "offsets_shape",
        "E",       "max_seq_len", "padding_value", "row_pad",
        "total_L", "out_shape",   "range",         "scale",
        "S"};
    c.ops["jagged_to_padded_dense"] = {"jagged_to_padded_dense", jagged};
    c.ops["dense_to_jagged"] = {"dense_to_jagged", jagged};
    const std::set<std::string> cumsum = {"shape", "out_dtype", "range", "row_pad", "out_shape"};
    c.ops["complete_cumsum"] = {"complete_cumsum", cumsum};
    c.ops["exclusive_cumsum"] = {"complete_cumsum", cumsum};
    return c;
  }();
  return s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;  // case files are small; keeps each run fast
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (auto kind : {recops::cli::FileKind::cases, recops::cli::FileKind::perf}) {
    try {
      const recops::cli::CaseFile f =
          recops::cli::parse_case_text(text, "fuzz.yaml", kind, schema());
      for (const auto& row : recops::cli::expand(f)) {
        const auto& cs = *row.spec;
        if (cs.lengths && cs.lengths->B <= 4096)
          (void)recops::cli::make_lengths(*cs.lengths, cs.seed);
      }
    } catch (const recops::cli::CaseFileError&) {
      // A located error is the expected outcome for malformed text.
    }
  }
  return 0;
}
