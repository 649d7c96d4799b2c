// tests/fuzz/fuzz_case_inputs.cpp: case-file text through the code that turns a case into tensors,
// as `recops check` runs it: the real schema of the CLI (case_schema(), every registered driver),
// expand(), then each row's Driver::make (tools/recops/inputs.cpp, gen.cpp and the op's
// driver.cpp: lengths, offsets, row padding, HSTU's paged= / delta= / max_k= / rab, Stem's
// qmax= / kmax= / kv= ...), and for a small problem the op on the CPU (run_poisoned), its golden
// and the judge.
//
// Input: byte 0 selects an op (its index in the registry's list, modulo its size); the rest is
// the case file. A file without a top-level `op:` line gets `op: <selected op>` put before it, so
// that the same cases are tried on every op; a file with one keeps it (the seeds copied from
// src/ops/*/*/cases.yaml do, and select their op whatever the registry's order).
//
// Expected outcomes: a CaseFileError, a bad case (make's Status), the op's refusal (a Status), a
// recops::Error (Tensor::empty's overflow / negative-size / out-of-memory message), a tag's
// std::invalid_argument from tools/recops/tag_value.h ("tag 'x': ..."), and std::bad_alloc from
// the allocation cap below. Anything else (a crash, a sanitizer report, another exception) is a
// finding: the harness prints it and aborts.
//
// The allocation cap (this target only; the library and the CLI are unchanged): one allocation
// may take at most kMaxAllocMiB. ASan's max_allocation_size_mb makes a larger malloc /
// aligned_alloc return null (allocator_may_return_null), which Tensor::empty reports as a recops
// error; the plain `new` of this file throws std::bad_alloc on null as the standard says (ASan's
// own would abort the fuzzer). A huge but valid size is thus the CLI's refused allocation, not an
// out-of-memory crash of the fuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "recops/context.h"
#include "recops/status.h"
#include "tools/recops/casefile.h"
#include "tools/recops/driver.h"
#include "tools/recops/judge.h"

#define RECOPS_FUZZ_STR2(x) #x
#define RECOPS_FUZZ_STR(x) RECOPS_FUZZ_STR2(x)
#define RECOPS_FUZZ_MAX_ALLOC_MIB 32

extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=" RECOPS_FUZZ_STR(
      RECOPS_FUZZ_MAX_ALLOC_MIB);
}

// Throwing new over ASan's nothrow one (which returns null past the cap): std::bad_alloc, not an
// abort. The matching deletes stay ASan's, so its new/delete mismatch checks still hold.
void* operator new(std::size_t n) {
  if (void* p = ::operator new(n, std::nothrow)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = ::operator new[](n, std::nothrow)) return p;
  throw std::bad_alloc();
}

namespace {

using namespace recops::cli;

// A problem is run on the CPU when its inputs and outputs hold at most this many bytes and its
// FLOP count (when the driver gives one) is at most kRunFlops.
constexpr double kRunBytes = 256 << 10;
constexpr double kRunFlops = 2e6;

// FUZZ_CASE_INPUTS_VERBOSE=1: one line a row on stderr (how far it went), to see what seeds reach.
bool verbose() {
  static const bool v = std::getenv("FUZZ_CASE_INPUTS_VERBOSE") != nullptr;
  return v;
}
void say(const CaseRow& row, const char* what, const std::string& detail = "") {
  if (verbose())
    std::fprintf(stderr, "%s %s: %s %s\n", row.op.c_str(), row.spec->id.c_str(), what,
                 detail.c_str());
}

const CaseSchema& schema() {
  static const CaseSchema s = case_schema();
  return s;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& d : drivers())
      for (const auto& o : d->ops()) v.push_back(o);
    return v;
  }();
  return names;
}

bool has_op_line(const std::string& text) {
  return text.rfind("op:", 0) == 0 || text.find("\nop:") != std::string::npos;
}

[[noreturn]] void finding(const std::string& op, const char* what, const std::string& msg) {
  std::fprintf(stderr, "fuzz_case_inputs: %s: %s: %s\n", op.c_str(), what, msg.c_str());
  std::abort();
}

// What `recops check` does with one row on the CPU backend, bounded in size.
void check_row(const Driver& d, const CaseRow& row, bool run) {
  Problem p;
  if (recops::Status s = d.make(row, &p); !s.ok()) return say(row, "bad case", s.message());
  (void)d.bytes(p);  // bench's byte floor
  // The FLOP count walks the problem (HSTU's counts its mask): small problems only.
  if (set_bytes(p) > kRunBytes) return say(row, "made, not run (bytes)");
  const double flops = d.flops(p);
  if (!p.shape_error.ok()) return say(row, "shape error", p.shape_error.message());
  if (!run || !(flops <= kRunFlops)) return say(row, "made, not run (flops)");
  recops::Context base;
  base.num_threads = 1;
  const RunOut first = run_poisoned(d, p, p.inputs, recops::Device::cpu(), base, 0);
  if (!first.status.ok() || row.spec->expect_error) return say(row, "ran", first.status.message());
  std::vector<recops::Tensor> gold;
  if (recops::Status s = d.golden(p, &gold); !s.ok()) return say(row, "golden failed", s.message());
  if (!d.judge_outputs(p, first.host_out, gold)) {
    JudgeOptions jo;
    for (size_t i = 0; i < p.outputs.size() && i < gold.size() && i < first.host_out.size(); ++i)
      (void)judge(first.host_out[i].view(), gold[i].view(), jo);
  }
  say(row, "ran and judged");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 16384) return 0;  // case files are small; keeps each run fast
  const auto& ops = op_names();
  if (ops.empty()) finding("-", "setup", "no driver is registered");
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (!has_op_line(text)) text = "op: " + ops[data[0] % ops.size()] + "\n" + text;
  for (auto kind : {FileKind::cases, FileKind::perf}) {
    CaseFile f;
    std::vector<CaseRow> rows;
    try {
      f = parse_case_text(text, "fuzz.yaml", kind, schema());
      rows = expand(f);
    } catch (const CaseFileError&) {
      continue;  // a located error: the expected outcome for malformed text
    }
    for (const CaseRow& row : rows) {
      const Driver* d = driver_for(row.op);
      if (!d) finding(row.op, "schema", "the parser took an op that has no driver");
      try {
        check_row(*d, row, kind == FileKind::cases);
      } catch (const recops::Error& e) {
        // Tensor::empty's overflow, negative size or refused allocation; the op's error.
        say(row, "recops::Error", e.what());
      } catch (const CaseFileError& e) {
        say(row, "CaseFileError", e.what());
      } catch (const std::bad_alloc&) {
        say(row, "std::bad_alloc (the cap)");
      } catch (const std::invalid_argument& e) {
        // tag_value.h's errors name the tag; a bare std::stoll's "stoll" is a finding.
        if (std::string(e.what()).rfind("tag '", 0) != 0)
          finding(row.op, "std::invalid_argument", e.what());
        say(row, "tag error", e.what());
      } catch (const std::exception& e) {
        finding(row.op, "exception", e.what());
      }
    }
  }
  return 0;
}
