// Reliability regressions (issue 21) through the C++ API: huge sizes and bounds that used to
// overflow, outputs whose elements alias, and empty products that used to be refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#ifdef RECOPS_WITH_CUDA
#include "core/cuda/cublas.h"
#include "core/cuda/runtime.h"
#endif
#include "recops/hstu.h"
#include "recops/jagged.h"
#include "recops/sparse_attn.h"
#include "test_util.h"

namespace recops {
namespace {
using testing::with_impl;

Tensor filled(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(s, DType::fp32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.view().ptr<float>()[i] = static_cast<float>((seed * 7919 + i * 104729) % 17) / 8.0f - 1.0f;
  return t;
}

Tensor ints64(const std::vector<int64_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::int64);
  for (size_t i = 0; i < v.size(); ++i) t.view().ptr<int64_t>()[i] = v[i];
  return t;
}

Tensor ints32(const std::vector<int64_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::int32);
  for (size_t i = 0; i < v.size(); ++i) t.view().ptr<int32_t>()[i] = static_cast<int32_t>(v[i]);
  return t;
}

void expect_error(const Status& s, const std::vector<std::string>& words) {
  ASSERT_FALSE(s.ok());
  for (const auto& w : words) EXPECT_NE(s.message().find(w), std::string::npos) << s.message();
}

// A jagged HSTU problem of two sequences (lengths 5 and 3), 2 heads, d = 4.
struct Hstu {
  Tensor q = filled({8, 2, 4}, 1), k = filled({8, 2, 4}, 2), v = filled({8, 2, 4}, 3);
  Tensor off = ints64({0, 5, 8});
  HstuAttnArgs args() const {
    HstuAttnArgs a;
    a.q = q;
    a.k = k;
    a.v = v;
    a.seq_offsets_q = a.seq_offsets_k = off.view();  // self-attention: one length per sequence
    a.max_seq_len_q = a.max_seq_len_k = 5;
    return a;
  }
};

// A bound at least as long as every sequence never masks: (2^63-1, 2^63-1) is (-1, -1), and a
// right bound of 2^63-1 is unbounded, on every CPU implementation (it used to wrap in r + bound).
TEST(Reliability, HugeHstuWindowIsUnbounded) {
  const Hstu h;
  for (const char* impl : {"reference", "cpu_generic", "cpu_avx2"}) {
    for (auto [l, r] : {std::pair<int64_t, int64_t>{INT64_MAX, INT64_MAX},
                        {-1, INT64_MAX},
                        {INT64_MAX, -1},
                        {5, 5}}) {
      HstuAttnArgs a = h.args(), b = h.args();
      a.window_left = l;
      a.window_right = r;
      b.window_left = -1;
      b.window_right = -1;
      Tensor got = Tensor::empty({8, 2, 4}, DType::fp32),
             want = Tensor::empty({8, 2, 4}, DType::fp32);
      std::string used;
      const Status s = hstu_attn_fwd(a, got, with_impl(impl, &used));
      if (!s.ok() && s.message().find("no implementation accepts") != std::string::npos) continue;
      ASSERT_TRUE(s.ok()) << impl << ": " << s.message();
      ASSERT_TRUE(hstu_attn_fwd(b, want, with_impl(impl)).ok());
      for (int64_t i = 0; i < got.numel(); ++i)
        ASSERT_EQ(got.view().ptr<float>()[i], want.view().ptr<float>()[i])
            << impl << " window (" << l << ", " << r << ") element " << i;
    }
  }
}

// An output whose batch stride is 0 would have its batches overwrite each other.
TEST(Reliability, AliasingOutputRefused) {
  Tensor q = filled({2, 3, 1, 4}, 4);  // dense [B, S, H, d]
  HstuAttnArgs a;
  a.q = a.k = a.v = q.view();
  a.max_seq_len_q = a.max_seq_len_k = 3;
  Tensor buf = Tensor::empty({3, 1, 4}, DType::fp32);
  const TensorView out(buf.view().data, DType::fp32, Device::cpu(), {2, 3, 1, 4}, {0, 4, 4, 1});
  expect_error(hstu_attn_fwd(a, out), {"hstu_attn_fwd", "out", "stride 0 on dim 0", "alias"});

  // jagged_to_padded_dense's dense output with batch stride 0.
  Tensor values = filled({4, 2}, 5);
  Tensor off = ints64({0, 1, 4});
  Tensor dense = Tensor::empty({3, 2}, DType::fp32);
  const TensorView dv(dense.view().data, DType::fp32, Device::cpu(), {2, 3, 2}, {0, 2, 1});
  expect_error(jagged_to_padded_dense(values, off.view(), 3, 0.0, dv),
               {"jagged_to_padded_dense", "out", "stride 0 on dim 0", "alias"});

  // An empty output has nothing to alias: any strides will do.
  Tensor e = Tensor::empty({0, 3, 1, 4}, DType::fp32);
  a.q = a.k = a.v = e.view();
  const TensorView eo(e.view().data, DType::fp32, Device::cpu(), {0, 3, 1, 4}, {0, 0, 0, 1});
  EXPECT_TRUE(hstu_attn_fwd(a, eo).ok());
}

// Zero query heads is an empty product: an empty output, not an error.
TEST(Reliability, HstuZeroHeadsGivesEmptyOutput) {
  Tensor q = Tensor::empty({6, 0, 8}, DType::fp32);
  Tensor off = ints64({0, 6});
  HstuAttnArgs a;
  a.q = a.k = a.v = q.view();
  a.seq_offsets_q = a.seq_offsets_k = off.view();
  a.max_seq_len_q = a.max_seq_len_k = 6;
  Shape s;
  ASSERT_TRUE(hstu_attn_fwd_shape(a, &s).ok());
  EXPECT_EQ(s, Shape({6, 0, 8}));
  Tensor out = Tensor::empty(s, DType::fp32);
  EXPECT_TRUE(hstu_attn_fwd(a, out).ok());
  Tensor dq = Tensor::empty({6, 0, 8}, DType::fp32);
  EXPECT_TRUE(hstu_attn_bwd(out, a, dq, dq, dq, nullptr).ok());
  // k needs heads whenever q has some.
  Tensor q2 = Tensor::empty({6, 2, 8}, DType::fp32);
  a.q = q2.view();
  expect_error(hstu_attn_fwd_shape(a, &s), {"Hk=0", "Hq=2"});
}

// stem_indexer_metadata stores its attributes as int32: values that do not fit are refused
// (q_heads = 2^32+2 used to be stored as 2), naming the argument.
TEST(Reliability, StemMetadataRefusesNarrowing) {
  Tensor lens = ints32({100});
  StemIndexerMetadataArgs a;
  a.q_seq_lens = a.kv_seq_lens = lens.view();
  a.q_heads = (int64_t{1} << 32) + 2;
  a.kv_heads = 1;
  Shape s;
  expect_error(stem_indexer_metadata_shape(a, &s),
               {"stem_indexer_metadata", "q_heads=4294967298", "int32"});
  a.q_heads = 2;
  a.stem_block_size = (int64_t{1} << 32) + 128;
  expect_error(stem_indexer_metadata_shape(a, &s), {"stem_block_size=4294967424", "int32"});
}

#ifdef RECOPS_WITH_CUDA
// Host threads that end give their cuBLAS handle back: 32 threads one after another share one
// handle (each used to keep its own, and a check run with --threads 8 ran out of device memory).
TEST(Reliability, CublasHandlesOfEndedThreadsAreReused) {
  if (core::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  std::set<cublasHandle_t> seen;
  for (int t = 0; t < 32; ++t) {
    cublasHandle_t h = nullptr;
    Status st;
    std::thread([&] { st = core::cuda::cublas_handle(nullptr, &h); }).join();
    ASSERT_TRUE(st.ok()) << st.message();
    seen.insert(h);
  }
  EXPECT_EQ(seen.size(), 1u);
  // Two live threads hold two different handles.
  cublasHandle_t a = nullptr, b = nullptr;
  ASSERT_TRUE(core::cuda::cublas_handle(nullptr, &a).ok());
  std::thread([&] { ASSERT_TRUE(core::cuda::cublas_handle(nullptr, &b).ok()); }).join();
  EXPECT_NE(a, b);
}
#endif

#ifdef _OPENMP
// core::parallel_for split [0, n) by the thread count it asked OpenMP for, so where the team came
// out smaller (a call from inside the caller's own parallel region, where nesting is off; under
// OMP_DYNAMIC=true or OMP_THREAD_LIMIT) only the first share of every output was written. A call
// from inside a parallel region must give the same bytes as one outside it.
TEST(Reliability, CpuOpsCompleteInsideCallersParallelRegion) {
  const int64_t B = 256, L = 32, D = 8;
  std::vector<int64_t> off(B + 1);
  for (int64_t b = 0; b <= B; ++b) off[static_cast<size_t>(b)] = b * L - (b > 0 ? b % 3 : 0);
  off[B] = B * L;
  const Tensor offsets = ints64(off), values = filled({B * L, D}, 9);
  const Tensor counts = ints64(std::vector<int64_t>(4096, 3));
  Context ctx;
  ctx.num_threads = 4;
  auto run = [&](Tensor* dense, Tensor* sums) {
    *dense = Tensor::empty({B, L, D}, DType::fp32);
    *sums = Tensor::empty({4097}, DType::int64);
    for (int64_t i = 0; i < dense->numel(); ++i) dense->view().ptr<float>()[i] = -7.f;
    for (int64_t i = 0; i < sums->numel(); ++i) sums->view().ptr<int64_t>()[i] = -7;
    return jagged_to_padded_dense(values, offsets, L, 0.5, *dense, ctx).ok() &&
           complete_cumsum(counts, *sums, ctx).ok();
  };
  Tensor want_dense, want_sums, got_dense, got_sums;
  ASSERT_TRUE(run(&want_dense, &want_sums));
  bool ok = false;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    ok = run(&got_dense, &got_sums);
  }
  ASSERT_TRUE(ok);
  for (int64_t i = 0; i < want_dense.numel(); ++i)
    ASSERT_EQ(got_dense.view().ptr<float>()[i], want_dense.view().ptr<float>()[i]) << "dense " << i;
  for (int64_t i = 0; i < want_sums.numel(); ++i)
    ASSERT_EQ(got_sums.view().ptr<int64_t>()[i], 3 * i) << "complete_cumsum " << i;
}
#endif

}  // namespace
}  // namespace recops
