// jagged/concat_1d_jagged/test_concat_1d_jagged.cpp: torch-free checks beyond `recops check`'s
// cases: a worked example of each part kind, the split, and refusal messages. Tensors are views
// over std::vectors of int64 (ids, the common 1-D payload).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/jagged/concat_1d_jagged/concat_1d_jagged.h"

namespace recops {
namespace {

using Ids = std::vector<int64_t>;

// A view of `v` (int64, CPU): 1-D by default, else `shape` with `strides` (default dense).
TensorView view_of(Ids& v, Shape shape = {}, Shape strides = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  if (strides.empty()) return TensorView(v.data(), DType::int64, Device::cpu(), shape);
  return TensorView(v.data(), DType::int64, Device::cpu(), shape, strides);
}

// The error text of a failed call ("" when it succeeded).
std::string error_of(const Status& s) {
  return s.ok() ? std::string() : s.message();
}

TEST(Concat1dJagged, JaggedJaggedAndItsSplit) {
  // A lengths 2, 0, 1; B lengths 0, 3, 1: [A0 | B1 | A2, B2]
  Ids a = {10, 11, 12}, oa = {0, 2, 2, 3}, b = {20, 21, 22, 23}, ob = {0, 0, 3, 4};
  Ids out(7, -1), off(4, -1);
  Concat1dJaggedBwdArgs args;
  args.values_a = view_of(a);
  args.offsets_a = view_of(oa);
  args.values_b = view_of(b);
  args.offsets_b = view_of(ob);
  ASSERT_TRUE(concat_1d_jagged(args, view_of(out), view_of(off)).ok());
  EXPECT_EQ(out, (Ids{10, 11, 20, 21, 22, 12, 23}));
  EXPECT_EQ(off, (Ids{0, 2, 5, 7}));
  Ids ga(3, -1), gb(4, -1);
  args.grad = view_of(out);
  ASSERT_TRUE(concat_1d_jagged_bwd(args, view_of(ga), view_of(gb)).ok());
  EXPECT_EQ(ga, a);
  EXPECT_EQ(gb, b);
}

TEST(Concat1dJagged, DensePrefixStridedAndDenseSuffix) {
  // A dense [B] read with stride 2 (SLL's prefix); B jagged: [a0, B0 | a1 | a2, B2]
  Ids a = {1, -9, 2, -9, 3, -9}, b = {7, 8, 9}, ob = {0, 2, 2, 3};
  Ids out(6, 0), off(4, 0);
  ASSERT_TRUE(concat_1d_jagged({view_of(a, {3}, {2}), std::nullopt, view_of(b), view_of(ob)},
                               view_of(out), view_of(off))
                  .ok());
  EXPECT_EQ(out, (Ids{1, 7, 8, 2, 3, 9}));
  EXPECT_EQ(off, (Ids{0, 3, 4, 6}));
  // B dense [3, 2] after A jagged with lengths 0, 1, 0: [B0 | A1, B1 | B2]
  Ids a1 = {5}, oa1 = {0, 0, 1, 1}, d = {30, 31, 40, 41, 50, 51};
  Ids out2(7, 0), off2(4, 0);
  ASSERT_TRUE(concat_1d_jagged({view_of(a1), view_of(oa1), view_of(d, {3, 2}), std::nullopt},
                               view_of(out2), view_of(off2))
                  .ok());
  EXPECT_EQ(out2, (Ids{30, 31, 5, 40, 41, 50, 51}));
  EXPECT_EQ(off2, (Ids{0, 2, 5, 7}));
}

TEST(Concat1dJagged, EmptyBatchWritesOneOffset) {
  Ids none, zero = {0}, off = {-1};
  ASSERT_TRUE(concat_1d_jagged({view_of(none), view_of(zero), view_of(none), view_of(zero)},
                               view_of(none), view_of(off))
                  .ok());
  EXPECT_EQ(off, (Ids{0}));
}

TEST(Concat1dJagged, Refusals) {
  Ids a = {1, 2, 3}, oa = {0, 1, 3}, out(6, 0), off(3, 0);
  EXPECT_NE(error_of(concat_1d_jagged({view_of(a, {3, 1}), view_of(oa), view_of(a), view_of(oa)},
                                      view_of(out), view_of(off)))
                .find("values_a must be 1-D [total_L] when offsets_a is given"),
            std::string::npos);
  EXPECT_NE(error_of(concat_1d_jagged({view_of(a), view_of(oa), view_of(a), std::nullopt},
                                      view_of(out), view_of(off)))
                .find("the batch sizes differ: 2 samples in values_a/offsets_a, 3 in values_b"),
            std::string::npos);
  Ids bad = {0, 2, 1};
  EXPECT_NE(error_of(concat_1d_jagged({view_of(a), view_of(bad), view_of(a), view_of(oa)},
                                      view_of(out), view_of(off)))
                .find("offsets_a[2]=1 < offsets_a[1]=2"),
            std::string::npos);
  Ids short_off = {0, 0};
  EXPECT_NE(error_of(concat_1d_jagged({view_of(a), view_of(oa), view_of(a), view_of(oa)},
                                      view_of(out), view_of(short_off)))
                .find("offsets must be contiguous [3] int64"),
            std::string::npos);
  // 2^31 + 1 elements (a dense part of zero strides) cannot take int32 offsets; no memory needed.
  int32_t ob32[3] = {0, 0, 1};
  const TensorView huge(a.data(), DType::int64, Device::cpu(), {2, int64_t{1} << 30}, {0, 0});
  const TensorView ob(ob32, DType::int32, Device::cpu(), {3});
  Shape vs, os;
  DType odt = DType::int64;
  EXPECT_NE(
      error_of(concat_1d_jagged_shape({huge, std::nullopt, view_of(a, {1}), ob}, &vs, &os, &odt))
          .find("more than int32 offsets can hold"),
      std::string::npos);
}

}  // namespace
}  // namespace recops
