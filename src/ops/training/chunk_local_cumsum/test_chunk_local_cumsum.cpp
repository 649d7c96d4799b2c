// training/chunk_local_cumsum/test_chunk_local_cumsum.cpp: the C++ tests of the op beyond
// `recops check`'s cases: hand-computed sums (chunks, reverse, scale, packed sequences with an
// empty one), the backward as the other direction, refusals and their messages, and the CPU path's
// independence from the thread count (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/training/chunk_local_cumsum/chunk_local_cumsum.h"
#include "recops/tensor.h"

namespace recops {
namespace {

Tensor from_values(const std::vector<float>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::fp32);
  std::memcpy(t.data(), v.data(), v.size() * sizeof(float));
  return t;
}

std::vector<float> values(const Tensor& t) {
  const float* p = static_cast<const float*>(t.data());
  return std::vector<float>(p, p + t.view().numel());
}

// g = 1, 2, 3, 4, 5 along T (B = 1, H = 1), chunks of 2: [1 2] [3 4] [5].
TEST(ChunkLocalCumsum, SumsWithinChunks) {
  Tensor g = from_values({1, 2, 3, 4, 5}, {1, 5, 1});
  Tensor out = Tensor::empty({1, 5, 1}, DType::fp32);
  ChunkLocalCumsumArgs a;
  a.g = g.view();
  a.chunk_size = 2;
  ASSERT_TRUE(chunk_local_cumsum(a, out.view()).ok());
  EXPECT_EQ(values(out), (std::vector<float>{1, 3, 3, 7, 5}));
  a.reverse = true;
  a.scale = 2.0;
  ASSERT_TRUE(chunk_local_cumsum(a, out.view()).ok());
  EXPECT_EQ(values(out), (std::vector<float>{6, 4, 14, 8, 10}));
}

// Packed sequences [0, 0) (empty), [0, 3), [3, 5): chunks restart at rows 0 and 3.
TEST(ChunkLocalCumsum, ChunksRestartAtEachSequence) {
  Tensor g = from_values({1, 2, 3, 4, 5}, {1, 5, 1});
  Tensor off = Tensor::empty({4}, DType::int32);
  const int32_t o[] = {0, 0, 3, 5};
  std::memcpy(off.data(), o, sizeof o);
  Tensor out = Tensor::empty({1, 5, 1}, DType::fp32);
  ChunkLocalCumsumArgs a;
  a.g = g.view();
  a.chunk_size = 2;
  a.seq_offsets = off.view();
  ASSERT_TRUE(chunk_local_cumsum(a, out.view()).ok());
  EXPECT_EQ(values(out), (std::vector<float>{1, 3, 3, 4, 9}));
  a.chunk_size = 4;
  a.reverse = true;
  ASSERT_TRUE(chunk_local_cumsum(a, out.view()).ok());
  EXPECT_EQ(values(out), (std::vector<float>{6, 5, 3, 9, 5}));
}

// dg = scale · the other direction's sums of dout, in g's dtype.
TEST(ChunkLocalCumsum, BackwardSumsTheOtherWay) {
  Tensor g = Tensor::empty({1, 5, 1}, DType::fp64);
  Tensor dout = from_values({1, 2, 3, 4, 5}, {1, 5, 1});
  Tensor dg = Tensor::empty({1, 5, 1}, DType::fp64);
  ChunkLocalCumsumBwdArgs a;
  a.dout = dout.view();
  a.g = g.view();
  a.chunk_size = 2;
  a.scale = -1.0;
  ASSERT_TRUE(chunk_local_cumsum_bwd(a, dg.view()).ok());
  const double* p = static_cast<const double*>(dg.data());
  EXPECT_EQ(std::vector<double>(p, p + 5), (std::vector<double>{-3, -2, -7, -4, -5}));
}

// A 16-bit output is one rounding of the fp64 sum: 1 + 2^-8 + 2^-30 lies just above the bf16
// midpoint 1 + 2^-8, which a detour through float (to 1 + 2^-8, then a tie to even) rounds down.
TEST(ChunkLocalCumsum, RoundsOnceToSixteenBitOutputs) {
  Tensor g = from_values({1.0f, 0x1p-8f + 0x1p-30f, 1.0f, 0x1p-11f + 0x1p-30f}, {1, 4, 1});
  for (DType t : {DType::bf16, DType::fp16}) {
    std::vector<double> got;
    for (const char* impl : {"cpu_generic", "reference"}) {
      Tensor out = Tensor::empty({1, 4, 1}, t);
      ChunkLocalCumsumArgs a;
      a.g = g.view();
      a.chunk_size = 2;
      a.out_dtype = t;
      Context ctx;
      ctx.impl = impl;
      ASSERT_TRUE(chunk_local_cumsum(a, out.view(), ctx).ok());
      for (int i = 0; i < 4; ++i)
        got.push_back(t == DType::bf16 ? to_double(static_cast<const BFloat16*>(out.data())[i])
                                       : to_double(static_cast<const Half*>(out.data())[i]));
    }
    const double up = t == DType::bf16 ? 1 + 0x1p-7 : 1 + 0x1p-10;  // the next value above 1
    EXPECT_EQ(got[t == DType::bf16 ? 1 : 3], up) << dtype_name(t);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], got[4 + i]) << dtype_name(t) << " element " << i;
  }
}

Status call_with(int64_t chunk, std::optional<TensorView> off, const TensorView& g) {
  Tensor out = Tensor::empty(g.shape(), DType::fp32);
  ChunkLocalCumsumArgs a;
  a.g = g;
  a.chunk_size = chunk;
  a.seq_offsets = off;
  return chunk_local_cumsum(a, out.view());
}

TEST(ChunkLocalCumsum, Refusals) {
  Tensor g = Tensor::empty({1, 6, 2}, DType::fp32);
  Status s = call_with(12, std::nullopt, g.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("chunk_local_cumsum: chunk_size=12 must be a power of two"),
            std::string::npos)
      << s.message();
  s = call_with(-4, std::nullopt, g.view());
  EXPECT_NE(s.message().find("chunk_size=-4 must be a power of two"), std::string::npos)
      << s.message();

  Tensor off = Tensor::empty({3}, DType::int64);
  const int64_t short_total[] = {0, 2, 5};
  std::memcpy(off.data(), short_total, sizeof short_total);
  s = call_with(4, off.view(), g.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("seq_offsets[2]=5 but T (g's dim 1) is 6"), std::string::npos)
      << s.message();

  Tensor g2 = Tensor::empty({2, 3, 2}, DType::fp32);
  const int64_t ok_total[] = {0, 1, 3};
  std::memcpy(off.data(), ok_total, sizeof ok_total);
  s = call_with(4, off.view(), g2.view());
  EXPECT_NE(s.message().find("packed input (seq_offsets) requires B=1; got B=2"), std::string::npos)
      << s.message();

  Tensor out = Tensor::empty({1, 6, 2}, DType::bf16);
  ChunkLocalCumsumArgs a;
  a.g = g.view();
  s = chunk_local_cumsum(a, out.view());  // out_dtype None: out must be fp32
  EXPECT_NE(s.message().find("out must be contiguous fp32[1, 6, 2] (g's shape)"), std::string::npos)
      << s.message();
  a.scale = std::nan("");
  s = chunk_local_cumsum(a, out.view());
  EXPECT_NE(s.message().find("scale=nan must be finite"), std::string::npos) << s.message();
}

// Every output comes from one work item: 1 thread and 3 threads give the same bits, and the CPU
// path is one fp32 rounding of the fp64 reference (both sum in fp64; several column blocks,
// packed input).
TEST(ChunkLocalCumsum, CpuIsThreadCountIndependentAndCloseToReference) {
  const int64_t T = 203, H = 3, K = 101;  // C = 303: two column blocks
  std::vector<float> v(static_cast<size_t>(T * H * K));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) - 0.2f;
  Tensor g = from_values(v, {1, T, H, K});
  Tensor off = Tensor::empty({5}, DType::int64);
  const int64_t o[] = {0, 70, 70, 131, 203};
  std::memcpy(off.data(), o, sizeof o);
  ChunkLocalCumsumArgs a;
  a.g = g.view();
  a.chunk_size = 16;
  a.reverse = true;
  a.seq_offsets = off.view();
  std::vector<std::vector<float>> got;
  for (const char* impl : {"cpu_generic", "cpu_generic", "reference"}) {
    Tensor out = Tensor::empty({1, T, H, K}, DType::fp32);
    Context ctx;
    ctx.impl = impl;
    ctx.num_threads = got.empty() ? 1 : 3;
    ASSERT_TRUE(chunk_local_cumsum(a, out.view(), ctx).ok());
    got.push_back(values(out));
  }
  EXPECT_EQ(got[0], got[1]);
  for (size_t i = 0; i < got[0].size(); ++i)
    ASSERT_LE(std::fabs(got[0][i] - got[2][i]), std::fabs(got[2][i]) * 0x1p-23f) << "element " << i;
}

}  // namespace
}  // namespace recops
