// tests/fuzz/fuzz_jagged_entries.cpp: random offsets, shapes, dtypes and scalars through the public
// entries of the jagged ops and the cumsum family on the CPU. Errors are fine; crashes, sanitizer
// reports and out-of-bounds accesses are not. Every tensor handed to an op is really allocated
// at the size its view claims: the fuzzer attacks the validation of contents and shapes, not the
// caller's contract that a view describes its memory.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "recops/recops.h"

namespace {

using recops::DType;
using recops::Shape;
using recops::Tensor;

constexpr int64_t kMaxElems = int64_t{1} << 16;  // per tensor, keeps runs fast

DType any_dtype(FuzzedDataProvider& fdp) {
  return recops::kAllDTypes[fdp.ConsumeIntegralInRange<size_t>(0,
                                                               std::size(recops::kAllDTypes) - 1)];
}

// Product of the extents with 0 counted as 1, saturating at INT64_MAX: the bound that keeps
// both the allocation and the contiguous strides small (shape functions may return huge extents
// next to a zero one, e.g. B = 0 with max_seq_len = 2^62).
int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) {
    if (x < 0) return INT64_MAX;
    if (__builtin_mul_overflow(n, x > 0 ? x : 1, &n)) return INT64_MAX;
  }
  return n;
}

// A shape of 0..max_dims dims with small extents (bounded total size).
Shape small_shape(FuzzedDataProvider& fdp, int min_dims, int max_dims, int64_t max_extent) {
  Shape s;
  const int nd = fdp.ConsumeIntegralInRange<int>(min_dims, max_dims);
  for (int i = 0; i < nd; ++i) s.push_back(fdp.ConsumeIntegralInRange<int64_t>(0, max_extent));
  return s;
}

// A tensor filled from the fuzzer's bytes (the rest zero).
bool make(FuzzedDataProvider& fdp, const Shape& shape, DType t, Tensor* out) {
  if (numel(shape) > kMaxElems) return false;
  *out = Tensor::empty(shape, t);
  const size_t bytes = static_cast<size_t>(out->nbytes());
  std::vector<uint8_t> raw = fdp.ConsumeBytes<uint8_t>(bytes);
  raw.resize(bytes, 0);
  if (bytes) std::memcpy(out->data(), raw.data(), bytes);
  return true;
}

// seq_offsets: mostly plausible (a cumsum of small lengths, perhaps corrupted at one place),
// sometimes raw bytes, with a random dtype and rank.
bool make_offsets(FuzzedDataProvider& fdp, Tensor* out, int64_t* last) {
  const DType t =
      fdp.ConsumeBool() ? (fdp.ConsumeBool() ? DType::int64 : DType::int32) : any_dtype(fdp);
  const int64_t n = fdp.ConsumeIntegralInRange<int64_t>(0, 70);
  Shape shape = {n};
  if (fdp.ConsumeIntegralInRange<int>(0, 9) == 0) shape = {1, n};
  if (!make(fdp, shape, t, out)) return false;
  *last = 0;
  if ((t == DType::int64 || t == DType::int32) && fdp.ConsumeBool()) {
    int64_t acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) acc += fdp.ConsumeIntegralInRange<int64_t>(0, 40);
      const int64_t v =
          fdp.ConsumeIntegralInRange<int>(0, 30) == 0 ? fdp.ConsumeIntegral<int64_t>() : acc;
      if (t == DType::int64)
        static_cast<int64_t*>(out->data())[i] = v;
      else
        static_cast<int32_t*>(out->data())[i] = static_cast<int32_t>(v);
    }
    *last = acc;
  }
  return true;
}

void fuzz_jagged_to_padded_dense(FuzzedDataProvider& fdp) {
  Tensor off;
  int64_t last = 0;
  if (!make_offsets(fdp, &off, &last)) return;
  const DType t = any_dtype(fdp);
  const int64_t total_L = fdp.ConsumeBool() ? last : fdp.ConsumeIntegralInRange<int64_t>(0, 300);
  Shape vshape = {total_L};
  for (int64_t e : small_shape(fdp, 0, 2, 9)) vshape.push_back(e);
  Tensor values;
  if (!make(fdp, vshape, t, &values)) return;
  const int64_t max_L = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int64_t>(-3, 50)
                                          : fdp.ConsumeIntegral<int64_t>();
  const double pad = fdp.ConsumeBool()
                         ? fdp.ConsumeFloatingPoint<double>()
                         : static_cast<double>(fdp.ConsumeIntegralInRange<int>(-2, 300));
  Shape out_shape;
  if (!recops::jagged_to_padded_dense_shape(values, off, max_L, &out_shape).ok()) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) out_shape = small_shape(fdp, 0, 4, 40);
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0 && !out_shape.empty() && out_shape.back() < 1000)
    out_shape.back() += 1;
  Tensor out;
  if (!make(fdp, out_shape, fdp.ConsumeIntegralInRange<int>(0, 7) ? t : any_dtype(fdp), &out))
    return;
  recops::Context ctx;
  if (fdp.ConsumeBool()) ctx.impl = fdp.ConsumeBool() ? "reference" : "cpu_generic";
  (void)recops::jagged_to_padded_dense(values, off, max_L, pad, out, ctx);
}

void fuzz_dense_to_jagged(FuzzedDataProvider& fdp) {
  Tensor off;
  int64_t last = 0;
  if (!make_offsets(fdp, &off, &last)) return;
  const DType t = any_dtype(fdp);
  const int64_t B = off.view().ndim == 1 && off.numel() > 0 ? off.numel() - 1 : 0;
  Shape dshape = {
      fdp.ConsumeIntegralInRange<int>(0, 9) ? B : fdp.ConsumeIntegralInRange<int64_t>(0, 5),
      fdp.ConsumeIntegralInRange<int64_t>(0, 45)};
  for (int64_t e : small_shape(fdp, 0, 2, 7)) dshape.push_back(e);
  if (fdp.ConsumeIntegralInRange<int>(0, 15) == 0) dshape.resize(1);
  Tensor dense;
  if (!make(fdp, dshape, t, &dense)) return;
  int64_t total_L = fdp.ConsumeBool() ? last : fdp.ConsumeIntegralInRange<int64_t>(-2, 300);
  if (fdp.ConsumeBool()) {
    int64_t read = 0;
    if (recops::dense_to_jagged_total_L(off, &read).ok()) total_L = read;
  }
  Shape out_shape;
  if (!recops::dense_to_jagged_shape(dense, off, total_L, &out_shape).ok()) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) out_shape = small_shape(fdp, 0, 3, 300);
  Tensor out;
  if (!make(fdp, out_shape, fdp.ConsumeIntegralInRange<int>(0, 7) ? t : any_dtype(fdp), &out))
    return;
  recops::Context ctx;
  if (fdp.ConsumeBool()) ctx.impl = fdp.ConsumeBool() ? "reference" : "cpu_generic";
  (void)recops::dense_to_jagged(dense, off, out, ctx);
}

void fuzz_cumsum(FuzzedDataProvider& fdp) {
  const int which = fdp.ConsumeIntegralInRange<int>(0, 2);
  const DType t = fdp.ConsumeIntegralInRange<int>(0, 7)
                      ? (fdp.ConsumeBool() ? DType::int64 : DType::int32)
                      : any_dtype(fdp);
  Tensor in;
  if (!make(fdp, small_shape(fdp, 0, 3, 300), t, &in)) return;
  const DType ot = fdp.ConsumeIntegralInRange<int>(0, 7)
                       ? (fdp.ConsumeBool() ? DType::int64 : DType::int32)
                       : any_dtype(fdp);
  Shape out_shape = in.shape();
  if (which == 0 && !recops::complete_cumsum_shape(in, &out_shape).ok()) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) out_shape = small_shape(fdp, 0, 3, 300);
  Tensor out;
  if (!make(fdp, out_shape, ot, &out)) return;
  recops::Context ctx;
  if (fdp.ConsumeBool()) ctx.impl = fdp.ConsumeBool() ? "reference" : "cpu_generic";
  ctx.num_threads = fdp.ConsumeIntegralInRange<int>(0, 3);
  if (which == 0)
    (void)recops::complete_cumsum(in, out, ctx);
  else if (which == 1)
    (void)recops::exclusive_cumsum(in, out, ctx);
  else
    (void)recops::inclusive_cumsum(in, out, ctx);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  try {
    switch (fdp.ConsumeIntegralInRange<int>(0, 2)) {
      case 0: fuzz_jagged_to_padded_dense(fdp); break;
      case 1: fuzz_dense_to_jagged(fdp); break;
      default: fuzz_cumsum(fdp); break;
    }
  } catch (const recops::Error&) {
    // Tensor::empty refusing a size is the harness's limit, not a finding.
  }
  return 0;
}
