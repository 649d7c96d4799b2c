// training/sort_chunks_by_idx/test_sort_chunks_by_idx.cpp: the C++ tests beyond `recops check`'s
// cases: the row moves on a small example by hand and the output refusals (torch-free; built
// into recops_tests).
#include <gtest/gtest.h>

#include <cstdint>

#include "ops/training/sort_chunks_by_idx/sort_chunks_by_idx.h"
#include "recops/tensor.h"

namespace recops {
namespace {

Tensor int64s(std::initializer_list<int64_t> v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::int64);
  int64_t* p = static_cast<int64_t*>(t.data());
  for (int64_t x : v) *p++ = x;
  return t;
}

TEST(SortChunksByIdx, MovesChunksAndBack) {
  // rows 0..5 in chunks {0,1} {2} {} {3,4,5}; order 3, 0, 2, 1 -> rows 3 4 5 0 1 2.
  Tensor x = int64s({0, 1, 2, 3, 4, 5});
  Tensor s = int64s({2, 1, 0, 3}), k = int64s({3, 0, 2, 1});
  Tensor y = Tensor::empty({6}, DType::int64), back = Tensor::empty({6}, DType::int64);
  ASSERT_TRUE(sort_chunks_by_idx({x.view(), s.view(), k.view(), {}}, y.view(), nullptr).ok());
  const int64_t want[6] = {3, 4, 5, 0, 1, 2};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<const int64_t*>(y.data())[i], want[i]);
  ASSERT_TRUE(
      sort_chunks_by_idx_bwd({y.view(), s.view(), k.view(), {}}, back.view(), nullptr).ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<const int64_t*>(back.data())[i], i);
}

TEST(SortChunksByIdx, RefusesMissingProbsOutput) {
  Tensor x = int64s({0, 1}), s = int64s({1, 1}), k = int64s({1, 0});
  Tensor p = Tensor::empty({2}, DType::fp32), y = Tensor::empty({2}, DType::int64);
  const Status st = sort_chunks_by_idx({x.view(), s.view(), k.view(), p.view()}, y.view(), nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("permuted_probs must be given exactly when probs is"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace recops
