// complete/exclusive/inclusive cumsum: CPU against the reference, the parallel long-row path,
// int32 overflow, shapes and bad inputs.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace recops {
namespace {
using testing::poison;
using testing::with_impl;

Tensor random_ints(const Shape& s, DType dt, uint64_t seed, int64_t lo, int64_t hi) {
  Tensor t = Tensor::empty(s, dt);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t v = core::uniform_int(seed, static_cast<uint64_t>(i), lo, hi);
    if (dt == DType::int64)
      t.view().ptr<int64_t>()[i] = v;
    else
      t.view().ptr<int32_t>()[i] = static_cast<int32_t>(v);
  }
  return t;
}

using Fn = Status (*)(const TensorView&, const TensorView&, const Context&);

TEST(Cumsum, CpuMatchesReference) {
  const Shape shapes[] = {{0}, {1}, {37}, {1 << 17}, {3, 0}, {5, 16}, {65536, 3}, {2, 1 << 17}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (DType in : {DType::int32, DType::int64}) {
      for (DType outd : {DType::int32, DType::int64}) {
        Tensor t = random_ints(s, in, ++seed, -50, 1000);
        Shape cs;
        ASSERT_TRUE(complete_cumsum_shape(t, &cs).ok());
        struct {
          Fn fn;
          Shape shape;
        } runs[] = {{complete_cumsum, cs}, {exclusive_cumsum, s}, {inclusive_cumsum, s}};
        for (auto& r : runs) {
          Tensor a = Tensor::empty(r.shape, outd), b = Tensor::empty(r.shape, outd);
          poison(a, 0x11);
          poison(b, 0x77);
          Status rs = r.fn(t, a, with_impl("reference"));
          ASSERT_TRUE(rs.ok()) << rs.message();
          Status st = r.fn(t, b, with_impl("cpu_generic"));
          ASSERT_TRUE(st.ok()) << st.message();
          EXPECT_TRUE(testing::bytes_equal(a, b)) << shape_str(s);
        }
      }
    }
  }
}

TEST(Cumsum, KnownValues) {
  Tensor t = Tensor::empty({4}, DType::int32);
  int32_t v[] = {3, -1, 0, 5};
  std::memcpy(t.data(), v, sizeof v);
  Tensor c = Tensor::empty({5}, DType::int64), e = Tensor::empty({4}, DType::int64),
         i = Tensor::empty({4}, DType::int64);
  ASSERT_TRUE(complete_cumsum(t, c).ok());
  ASSERT_TRUE(exclusive_cumsum(t, e).ok());
  ASSERT_TRUE(inclusive_cumsum(t, i).ok());
  const int64_t ce[] = {0, 3, 2, 2, 7}, ee[] = {0, 3, 2, 2}, ie[] = {3, 2, 2, 7};
  for (int k = 0; k < 5; ++k) EXPECT_EQ(c.view().ptr<int64_t>()[k], ce[k]);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(e.view().ptr<int64_t>()[k], ee[k]);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(i.view().ptr<int64_t>()[k], ie[k]);
}

TEST(Cumsum, Int32OverflowIsAnErrorAndInt64IsExact) {
  // Lengths summing past 2^31 - 1 (FBGEMM PR #5994), long enough for the parallel path.
  const int64_t n = 1 << 17;
  Tensor t = Tensor::empty({n}, DType::int32);
  for (int64_t k = 0; k < n; ++k) t.view().ptr<int32_t>()[k] = 20000;  // total 2.6e9
  Tensor o32 = Tensor::empty({n + 1}, DType::int32), o64 = Tensor::empty({n + 1}, DType::int64);
  for (const char* impl : {"reference", "cpu_generic"}) {
    Status st = complete_cumsum(t, o32, with_impl(impl));
    ASSERT_EQ(st.code(), StatusCode::out_of_range) << impl;
    EXPECT_NE(st.message().find("does not fit the int32 output"), std::string::npos)
        << st.message();
    ASSERT_TRUE(complete_cumsum(t, o64, with_impl(impl)).ok());
    EXPECT_EQ(o64.view().ptr<int64_t>()[n], 20000 * n);
  }
}

// The first overflowing output position, as both implementations name it, for every kind, on a
// unit-stride row long enough for the parallel path and on a strided short row.
TEST(Cumsum, Int32OverflowPositionMatchesReference) {
  const int64_t n = (1 << 17) + 3;
  Tensor base = Tensor::empty({2 * n}, DType::int32);
  for (int64_t k = 0; k < 2 * n; ++k) base.view().ptr<int32_t>()[k] = k % 7 == 0 ? -3 : 20000;
  const TensorView unit(base.data(), DType::int32, Device::cpu(), {n}, {1});
  const TensorView strided(base.data(), DType::int32, Device::cpu(), {n}, {2});
  auto position = [](const Status& st) {
    const auto at = st.message().find("output [");
    return at == std::string::npos ? std::string("none: " + st.message())
                                   : st.message().substr(at, st.message().find(']', at) - at);
  };
  for (const TensorView& t : {unit, strided}) {
    Tensor c = Tensor::empty({n + 1}, DType::int32), e = Tensor::empty({n}, DType::int32);
    const Status cr = complete_cumsum(t, c, with_impl("reference"));
    const Status cc = complete_cumsum(t, c, with_impl("cpu_generic"));
    ASSERT_EQ(cr.code(), StatusCode::out_of_range);
    EXPECT_EQ(position(cr), position(cc));
    for (Fn fn : {exclusive_cumsum, inclusive_cumsum}) {
      const Status r = fn(t, e, with_impl("reference"));
      const Status g = fn(t, e, with_impl("cpu_generic"));
      ASSERT_EQ(r.code(), StatusCode::out_of_range);
      EXPECT_EQ(position(r), position(g)) << r.message() << " | " << g.message();
    }
  }
}

// int32 rows of every short length with one large value at every position, up and down, so that
// the first overflow falls in each lane of the CPU's four-wide scan and in its scalar tail, also
// sums that leave int32 and come back (still an error at the first) and, for exclusive, a last
// sum that overflows but is no output (no error): status, position and values as the reference.
TEST(Cumsum, Int32OverflowInEveryLaneMatchesReference) {
  auto position = [](const Status& st) {
    const auto at = st.message().find("output [");
    return at == std::string::npos ? std::string("none")
                                   : st.message().substr(at, st.message().find(']', at) - at);
  };
  int errors = 0;
  for (int64_t n = 1; n <= 13; ++n) {
    for (int64_t at = 0; at < n; ++at) {
      for (const int32_t big : {INT32_MAX, INT32_MIN, INT32_MAX - 2, 1 << 30}) {
        Tensor t = Tensor::empty({n}, DType::int32);
        int32_t* v = t.view().ptr<int32_t>();
        for (int64_t k = 0; k < n; ++k) v[k] = k == at ? big : (big > 0 ? 3 : -3);
        if (at + 1 < n) v[at + 1] = big > 0 ? -7 : 7;  // back towards zero after the jump
        struct {
          Fn fn;
          int64_t len;
        } runs[] = {{complete_cumsum, n + 1}, {exclusive_cumsum, n}, {inclusive_cumsum, n}};
        for (const auto& r : runs) {
          Tensor want = Tensor::empty({r.len}, DType::int32),
                 got = Tensor::empty({r.len}, DType::int32);
          poison(got);
          const Status sr = r.fn(t, want, with_impl("reference"));
          const Status sg = r.fn(t, got, with_impl("cpu_generic"));
          ASSERT_EQ(sr.code(), sg.code()) << "n " << n << " at " << at << " big " << big << ": "
                                          << sr.message() << " | " << sg.message();
          EXPECT_EQ(position(sr), position(sg)) << sr.message() << " | " << sg.message();
          errors += !sr.ok();
          if (sr.ok())
            for (int64_t k = 0; k < r.len; ++k)
              ASSERT_EQ(want.view().ptr<int32_t>()[k], got.view().ptr<int32_t>()[k])
                  << "n " << n << " at " << at << " k " << k;
        }
      }
    }
  }
  EXPECT_GT(errors, 500);  // the rows above overflow often: the check is not vacuous
}

TEST(Cumsum, BadInputs) {
  Tensor f = Tensor::empty({4}, DType::fp32), o = Tensor::empty({5}, DType::int64);
  Status st = complete_cumsum(f, o);
  EXPECT_NE(st.message().find("t must be int32 or int64"), std::string::npos) << st.message();
  Tensor t3 = Tensor::empty({2, 2, 2}, DType::int64), o3 = Tensor::empty({2, 2, 3}, DType::int64);
  st = complete_cumsum(t3, o3);
  EXPECT_NE(st.message().find("must be 1-D [n] or 2-D [R, n]"), std::string::npos) << st.message();
  Tensor t = Tensor::empty({4}, DType::int64), wrong = Tensor::empty({4}, DType::int64);
  st = complete_cumsum(t, wrong);
  EXPECT_NE(st.message().find("expected [5]"), std::string::npos) << st.message();
  Tensor ob = Tensor::empty({4}, DType::bf16);
  st = inclusive_cumsum(t, ob);
  EXPECT_NE(st.message().find("out (out_dtype) must be int32 or int64"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace recops
