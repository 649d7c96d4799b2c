// jagged/jagged_jagged_bmm/test_jagged_jagged_bmm.cpp: the C++ tests beyond `recops check`'s
// cases (torch-free; built into tests/cpp's recops_tests): the CUDA split plan of long sequences
// (host code, so it is checked here without a GPU), the CPU's workspace, a negative stride.
#include <gtest/gtest.h>

#include "ops/jagged/common/bmm_params.h"
#include "ops/jagged/jagged_jagged_bmm/jagged_jagged_bmm.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using ops::bmm::BmmMode;
using ops::bmm::BmmParams;

BmmParams jj(int64_t B, int64_t total_L, int64_t max_L, int64_t M, int64_t N, DType t) {
  BmmParams p;
  p.mode = BmmMode::jagged_jagged;
  p.B = B, p.total_L = total_L, p.max_L = max_L, p.M = M, p.N = N, p.dtype = t;
  return p;
}

TEST(JaggedJaggedBmm, SplitPlanOfOneLongSequence) {
  BmmParams p = jj(1, 1 << 20, 1 << 20, 4, 4, DType::bf16);
  EXPECT_EQ(ops::bmm::bmm_split_chunks(&p), 32 * 4 * 4 * 4);  // fp32 partials [1, 32, 4, 4]
  EXPECT_EQ(p.chunks, 32);
  EXPECT_EQ(p.chunk_rows, 32768);
}

TEST(JaggedJaggedBmm, SplitChunksCoverEveryRow) {
  for (int64_t rows : {4097, 8191, 65536, 100003, 1 << 22})
    for (int64_t B : {1, 3, 7}) {
      BmmParams p = jj(B, rows, rows, 33, 65, DType::fp64);
      const int64_t bytes = ops::bmm::bmm_split_chunks(&p);
      ASSERT_GT(p.chunks, 1) << rows;
      EXPECT_GE(p.chunks * p.chunk_rows, rows);
      EXPECT_LE(p.chunks, ops::bmm::kSplitMaxChunks);
      EXPECT_EQ(bytes, p.chunks * B * 33 * 65 * 8);
      EXPECT_LE(bytes, ops::bmm::kSplitMaxBytes);
    }
}

TEST(JaggedJaggedBmm, NoSplitWithEnoughItemsShortRowsOrTheOtherOp) {
  BmmParams many = jj(64, 1 << 18, 4096 * 4, 1024, 1024, DType::bf16);  // 16384 tiles
  EXPECT_EQ(ops::bmm::bmm_split_chunks(&many), 0);
  EXPECT_EQ(many.chunks, 1);
  BmmParams short_rows = jj(1, 4096, 4096, 4, 4, DType::fp32);
  EXPECT_EQ(ops::bmm::bmm_split_chunks(&short_rows), 0);
  BmmParams truncated = jj(1, 1 << 20, 100, 4, 4, DType::fp32);  // max_L bounds every n_b
  EXPECT_EQ(ops::bmm::bmm_split_chunks(&truncated), 0);
  BmmParams dense = jj(1, 1 << 20, 1 << 20, 4, 4, DType::fp32);
  dense.mode = BmmMode::jagged_dense;
  EXPECT_EQ(ops::bmm::bmm_split_chunks(&dense), 0);
}

TEST(JaggedJaggedBmm, CpuNeedsNoWorkspace) {
  Tensor x = Tensor::empty({1 << 16, 4}, DType::fp32);
  Tensor off = Tensor::empty({2}, DType::int64);
  static_cast<int64_t*>(off.data())[0] = 0;
  static_cast<int64_t*>(off.data())[1] = 1 << 16;
  EXPECT_EQ(jagged_jagged_bmm_workspace_bytes({x.view(), x.view(), off.view(), 1 << 16}), 0u);
}

TEST(JaggedJaggedBmm, RefusesNegativeRowStride) {
  Tensor x = Tensor::empty({4, 3}, DType::fp32);
  Tensor z = Tensor::empty({1, 3, 3}, DType::fp32);
  Tensor off = Tensor::empty({2}, DType::int64);
  static_cast<int64_t*>(off.data())[0] = 0;
  static_cast<int64_t*>(off.data())[1] = 4;
  TensorView bad = x.view();
  bad.strides[0] = -3;
  const Status s = jagged_jagged_bmm({bad, x.view(), off.view(), 4}, z.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("jagged_jagged_bmm: x_values's last dim must have stride 1 and its "
                             "row stride must be >= 0"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace recops
