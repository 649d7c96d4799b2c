// tests/cpp/test_tuning.cpp: tunable configurations (recops/tuning.h): the configuration type, the
// run-time choice (forced, tuned file, default), the tuning files' errors, and that every candidate
// of the tunable CPU implementations gives the reference's bytes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "ops/jagged/common/row_copy_tuning.h"
#include "core/tuning.h"
#include "recops/recops.h"
#include "recops/registry.h"
#include "test_util.h"

namespace recops {
namespace {

using testing::fill_random_bits;
using testing::offsets_from_lengths;
using testing::poison;

// Points RECOPS_TUNING_FILE at a file written by the test for the test's lifetime.
class TuningFile {
 public:
  explicit TuningFile(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("recops_test_tuning_" + std::to_string(::getpid()) + ".json"))
                .string();
    std::ofstream(path_) << text;
    const char* old = std::getenv("RECOPS_TUNING_FILE");
    had_old_ = old != nullptr;
    if (old) old_ = old;
    setenv("RECOPS_TUNING_FILE", path_.c_str(), 1);
    reload_tuning();
  }
  ~TuningFile() {
    if (had_old_)
      setenv("RECOPS_TUNING_FILE", old_.c_str(), 1);
    else
      unsetenv("RECOPS_TUNING_FILE");
    reload_tuning();
    std::filesystem::remove(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_, old_;
  bool had_old_ = false;
};

std::string file_with(const std::string& entries) {
  return "{\"schema\": \"recops-tuning\", \"version\": 1, \"device\": \"" +
         tuning_device_name(DeviceType::cpu) + "\", \"backend\": \"cpu\", \"entries\": [" +
         entries + "]}";
}

std::vector<TuneConfig> candidates_of(const std::string& op, const std::string& impl) {
  for (const auto& info : list_ops())
    if (info.name == op)
      for (const auto& im : info.impls)
        if (im.id == impl) return im.candidates;
  return {};
}

TEST(Tuning, ConfigTextRoundTripsAndRejectsGarbage) {
  TuneConfig c;
  c.set("threads", 256);
  c.set("rows_per_thread", 4);
  c.set("threads", 512);
  EXPECT_EQ(c.str(), "threads=512,rows_per_thread=4");
  TuneConfig back;
  std::string err;
  ASSERT_TRUE(TuneConfig::parse(c.str(), &back, &err)) << err;
  EXPECT_TRUE(back == c);
  EXPECT_EQ(back.get("rows_per_thread", 0), 4);
  EXPECT_EQ(back.get("absent", -7), -7);
  EXPECT_FALSE(TuneConfig::parse("threads", &back, &err));
  EXPECT_NE(err.find("name=value"), std::string::npos);
  EXPECT_FALSE(TuneConfig::parse("threads=12x", &back, &err));
  EXPECT_NE(err.find("not an integer"), std::string::npos);
  EXPECT_EQ(device_slug("NVIDIA H200"), "nvidia-h200");
  EXPECT_EQ(device_slug("  AMD EPYC 7B13 64-Core Processor "), "amd-epyc-7b13-64-core-processor");
  EXPECT_EQ(core::pow2_bucket(1 << 20, 2), "2^20");
  EXPECT_EQ(core::pow2_bucket((1 << 20) + 1, 2), "2^22");
  EXPECT_EQ(core::row_copy_bucket(500, 3), "row_bytes=512,rows=2^2");
}

TEST(Tuning, RegistryListsCandidatesWithTheDefaultFirst) {
  const auto cpu = candidates_of("jagged_to_padded_dense", "cpu_generic");
  ASSERT_GE(cpu.size(), 2u);
  EXPECT_TRUE(cpu.front() == core::row_copy_cpu_default());
  EXPECT_TRUE(candidates_of("jagged_to_padded_dense", "reference").empty());
  const auto cuda = core::row_copy_cuda_candidates();
  EXPECT_TRUE(cuda.front() == core::row_copy_cuda_default());
  // The default: two units per lane, at most 32 lanes.
  for (int64_t w : {1, 2, 3, 4, 5, 63, 64, 65, 200})
    EXPECT_EQ(core::row_copy_lanes_log2(w, 2),
              w <= 2 ? 0 : std::min(5, 64 - __builtin_clzll(static_cast<uint64_t>(w - 1)) - 1))
        << w;
}

TEST(Tuning, ForcedConfigMustBeACandidate) {
  const auto cands = core::row_copy_cpu_candidates();
  core::TuneQuery q;
  q.op = "jagged_to_padded_dense";
  q.impl = "cpu_generic";
  q.bucket = "row_bytes=4,rows=2^4";
  q.candidates = &cands;
  q.fallback = core::row_copy_cpu_default();
  Context ctx;
  TuneUsed used;
  ctx.tune_used = &used;
  TuneConfig out;
  ASSERT_TRUE(core::resolve_config(q, ctx, &out).ok());
  EXPECT_EQ(used.source, "default");
  EXPECT_EQ(out.str(), "grain_bytes=65536");

  TuneConfig forced = cands.back();
  ctx.tune_config = &forced;
  ASSERT_TRUE(core::resolve_config(q, ctx, &out).ok());
  EXPECT_EQ(used.source, "forced");
  EXPECT_TRUE(out == forced);

  TuneConfig bad;
  bad.set("grain_bytes", 12345);
  ctx.tune_config = &bad;
  Status s = core::resolve_config(q, ctx, &out);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_NE(s.message().find("'grain_bytes=12345' is not one of"), std::string::npos)
      << s.message();
  TuneConfig unknown;
  unknown.set("threads", 256);
  ctx.tune_config = &unknown;
  s = core::resolve_config(q, ctx, &out);
  EXPECT_NE(s.message().find("parameter 'threads' is not a parameter"), std::string::npos)
      << s.message();
}

// jagged_to_padded_dense on the CPU with `ctx`, compared byte for byte with the reference.
void expect_j2pd_matches_reference(const Context& ctx, uint64_t seed) {
  const std::vector<int64_t> lengths = testing::random_lengths(300, 90, seed);
  int64_t total = 0;
  for (int64_t l : lengths) total += l;
  Tensor values = Tensor::empty({total, 16}, DType::fp16);
  fill_random_bits(values, seed);
  Tensor off = offsets_from_lengths(lengths, DType::int64);
  Tensor gold = Tensor::empty({300, 64, 16}, DType::fp16);
  Tensor got = Tensor::empty({300, 64, 16}, DType::fp16);
  poison(gold, 0x5A);
  poison(got, 0xA5);
  Context ref;
  ref.impl = "reference";
  ASSERT_TRUE(jagged_to_padded_dense(values, off, 64, 2.0, gold, ref).ok());
  Status st = jagged_to_padded_dense(values, off, 64, 2.0, got, ctx);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(testing::bytes_equal(gold, got));
}

TEST(Tuning, EveryCpuCandidateMatchesTheReference) {
  for (const char* op : {"jagged_to_padded_dense", "dense_to_jagged"}) {
    const auto cands = candidates_of(op, "cpu_generic");
    ASSERT_GE(cands.size(), 2u) << op;
    uint64_t seed = 7;
    for (const TuneConfig& c : cands) {
      Context ctx;
      ctx.impl = "cpu_generic";
      ctx.tune_config = &c;
      TuneUsed used;
      ctx.tune_used = &used;
      if (std::string(op) == "jagged_to_padded_dense") {
        expect_j2pd_matches_reference(ctx, ++seed);
      } else {
        const std::vector<int64_t> lengths = testing::random_lengths(200, 50, ++seed);
        int64_t total = 0;
        for (int64_t l : lengths) total += l;
        Tensor dense = Tensor::empty({200, 40, 8}, DType::fp32);
        fill_random_bits(dense, seed);
        Tensor off = offsets_from_lengths(lengths, DType::int32);
        Tensor gold = Tensor::empty({total, 8}, DType::fp32);
        Tensor got = Tensor::empty({total, 8}, DType::fp32);
        poison(gold, 0x5A);
        poison(got, 0xA5);
        Context ref;
        ref.impl = "reference";
        ASSERT_TRUE(dense_to_jagged(dense, off, gold, ref).ok());
        Status st = dense_to_jagged(dense, off, got, ctx);
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_TRUE(testing::bytes_equal(gold, got)) << c.str();
      }
      EXPECT_EQ(used.source, "forced") << op;
      EXPECT_TRUE(used.config == c) << op << " " << used.config.str();
    }
  }
}

TEST(Tuning, TunedFileEntryIsUsedForItsBucketOnly) {
  // The bucket of expect_j2pd_matches_reference's problem: 16 fp16 = 32-byte rows, 300*64 rows.
  const std::string bucket = core::row_copy_bucket(32, 300 * 64);
  TuningFile f(file_with(
      "{\"op\": \"jagged_to_padded_dense\", \"impl\": \"cpu_generic\", \"dtype\": \"fp16\", "
      "\"bucket\": \"" +
      bucket + "\", \"config\": {\"grain_bytes\": 16384}}"));
  EXPECT_TRUE(tuning_load_errors().empty());
  ASSERT_EQ(tuned_entries(tuning_device_name(DeviceType::cpu)).size(), 1u);
  Context ctx;
  TuneUsed used;
  ctx.tune_used = &used;
  expect_j2pd_matches_reference(ctx, 11);
  EXPECT_EQ(used.impl, "cpu_generic");
  EXPECT_EQ(used.bucket, bucket);
  EXPECT_EQ(used.source, "tuned");
  EXPECT_EQ(used.config.str(), "grain_bytes=16384");

  // Another bucket (other row width) runs the default.
  Tensor values = Tensor::empty({10, 3}, DType::fp32);
  fill_random_bits(values, 3);
  Tensor off = offsets_from_lengths({4, 6}, DType::int64);
  Tensor out = Tensor::empty({2, 8, 3}, DType::fp32);
  ASSERT_TRUE(jagged_to_padded_dense(values, off, 8, 0.0, out, ctx).ok());
  EXPECT_EQ(used.source, "default");
}

TEST(Tuning, EntryWithAConfigThatIsNoCandidateIsIgnored) {
  const std::string bucket = core::row_copy_bucket(32, 300 * 64);
  TuningFile f(file_with(
      "{\"op\": \"jagged_to_padded_dense\", \"impl\": \"cpu_generic\", \"dtype\": \"fp16\", "
      "\"bucket\": \"" +
      bucket + "\", \"config\": {\"grain_bytes\": 12345}}"));
  Context ctx;
  TuneUsed used;
  ctx.tune_used = &used;
  expect_j2pd_matches_reference(ctx, 12);
  EXPECT_EQ(used.source, "default");
}

TEST(Tuning, MalformedFilesAreReportedWithFileAndField) {
  {
    TuningFile f(file_with(
        "{\"op\": \"jagged_to_padded_dense\", \"impl\": \"cpu_generic\", \"dtype\": \"fp16\", "
        "\"bucket\": \"b\", \"config\": {\"grain_bytes\": \"big\"}}"));
    const auto errs = tuning_load_errors();
    ASSERT_EQ(errs.size(), 1u);
    EXPECT_NE(errs[0].find(f.path() + ": entries[0]: field 'config.grain_bytes': not an integer"),
              std::string::npos)
        << errs[0];
  }
  {
    TuningFile f("{\"version\": 1, \"device\": \"x\", \"entries\": [ {\"op\": 3} ]}");
    const auto errs = tuning_load_errors();
    ASSERT_EQ(errs.size(), 1u);
    EXPECT_NE(errs[0].find("entries[0]: field 'op': missing or not a string"), std::string::npos)
        << errs[0];
  }
  {
    TuningFile f("{\"version\": 2, \"device\": \"x\", \"entries\": []}");
    ASSERT_EQ(tuning_load_errors().size(), 1u);
    EXPECT_NE(tuning_load_errors()[0].find("field 'version': 2 is not the supported version 1"),
              std::string::npos);
  }
  {
    TuningFile f("{\"version\": 1,\n \"device\": \"x\" \"entries\": []}");
    ASSERT_EQ(tuning_load_errors().size(), 1u);
    // The parser's message names the line (and column) of the syntax error.
    EXPECT_NE(tuning_load_errors()[0].find("parse error at line 2"), std::string::npos)
        << tuning_load_errors()[0];
  }
  // Off: nothing read, no errors.
  setenv("RECOPS_TUNING_FILE", "none", 1);
  reload_tuning();
  EXPECT_TRUE(tuning_files().empty());
  EXPECT_TRUE(tuning_load_errors().empty());
  unsetenv("RECOPS_TUNING_FILE");
  reload_tuning();
}

}  // namespace
}  // namespace recops
