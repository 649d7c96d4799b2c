// tools/recops/drivers/jagged_common.cpp
#include "tools/recops/inputs.h"

#include <algorithm>
#include <limits>

#include "tools/recops/gen.h"

namespace recops::cli {

Status case_error(const CaseRow& row, const std::string& msg) {
  return Status(StatusCode::invalid_argument,
                "case '" + row.spec->id + "' (" + row.op + "): " + msg);
}

namespace {
// The product of `sizes` into *out; false when it leaves int64 (a case file's sizes may be
// anything, and a wrapped product would size a buffer wrongly).
bool size_product(const std::vector<int64_t>& sizes, int64_t* out) {
  int64_t n = 1;
  for (int64_t v : sizes)
    if (__builtin_mul_overflow(n, v, &n)) return false;
  *out = n;
  return true;
}
}  // namespace

Status make_offsets_input(const CaseRow& row, Input* out, std::vector<int64_t>* values) {
  const CaseSpec& cs = *row.spec;
  if (cs.lengths) {
    *values = offsets_from_lengths(make_lengths(*cs.lengths, cs.seed));
  } else if (cs.offsets) {
    *values = *cs.offsets;
  } else {
    return case_error(row, "needs `lengths` or `offsets`");
  }
  const DType t = row.offsets_dtype;
  const auto n = static_cast<int64_t>(values->size());
  if (t == DType::int32)
    for (int64_t v : *values)
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        return case_error(row, "offset " + std::to_string(v) + " does not fit offsets_dtype int32");
  Shape shape = {n};
  if (cs.offsets_shape) {
    int64_t m = 1;
    if (!size_product(*cs.offsets_shape, &m))
      return case_error(row, "offsets_shape " + shape_str(*cs.offsets_shape) +
                                 ": its element count overflows int64");
    if (m != n)
      return case_error(row, "offsets_shape " + shape_str(*cs.offsets_shape) + " holds " +
                                 std::to_string(m) + " elements, the offsets have " +
                                 std::to_string(n));
    shape = *cs.offsets_shape;
  }
  out->name = "seq_offsets";
  out->buf = Tensor::empty(shape, t);
  out->view = out->buf.view();
  const int64_t es = dtype_size(t);
  for (int64_t i = 0; i < n; ++i)
    store_int(static_cast<char*>(out->buf.data()) + i * es, t, (*values)[static_cast<size_t>(i)]);
  return Status::Ok();
}

Status make_rowpadded_input(const CaseRow& row, const std::string& name, DType dtype,
                            const Shape& lead, const std::vector<int64_t>& E, int64_t row_pad,
                            uint64_t slot, Input* out) {
  const CaseSpec& cs = *row.spec;
  int64_t rows = 1, D = 1, width = 0, total = 0;
  if (!size_product(lead, &rows) || !size_product(E, &D) ||
      __builtin_add_overflow(D, row_pad, &width) || !size_product({rows, width}, &total))
    return case_error(row, name + ": rows " + shape_str(lead) + " x (" + shape_str(E) +
                               " + row_pad " + std::to_string(row_pad) +
                               ") elements overflow int64");
  out->name = name;
  out->buf = Tensor::empty({rows, width}, dtype);
  Shape shape = lead, stride(lead.size() + E.size());
  shape.insert(shape.end(), E.begin(), E.end());
  // Dense strides for E, then the padded row stride for the lead dims.
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > lead.size();) {
    stride[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  s = width;
  for (size_t i = lead.size(); i-- > 0;) {
    stride[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  out->view = TensorView(out->buf.data(), dtype, Device::cpu(), shape, stride);
  // Padding elements get a different stream, so a kernel reading them gives wrong values.
  if (row_pad > 0)
    fill_view(out->buf.view(), FillSpec{tensor_seed(cs.seed, 100 + slot), cs.range, cs.scale});
  fill_view(out->view, FillSpec{tensor_seed(cs.seed, slot), cs.range, cs.scale});
  return Status::Ok();
}

int64_t valid_rows(const std::vector<int64_t>& offsets, int64_t bound) {
  int64_t n = 0;
  for (size_t b = 0; b + 1 < offsets.size(); ++b)
    n += std::clamp<int64_t>(offsets[b + 1] - offsets[b], 0, bound);
  return n;
}

Input int_input(const std::string& name, DType t, const std::vector<int64_t>& vals, Shape shape) {
  Input in;
  in.name = name;
  if (shape.empty()) shape = {static_cast<int64_t>(vals.size())};
  in.buf = Tensor::empty(shape, t);
  in.view = in.buf.view();
  for (size_t i = 0; i < vals.size(); ++i)
    store_int(static_cast<char*>(in.buf.data()) + static_cast<int64_t>(i) * dtype_size(t), t,
              vals[i]);
  return in;
}

Input data_input(const std::string& name, DType t, const Shape& shape, uint64_t seed,
                 double scale) {
  Input in;
  in.name = name;
  in.buf = Tensor::empty(shape, t);
  in.view = in.buf.view();
  FillSpec f;
  f.seed = seed;
  f.scale = scale;
  fill_view(in.view, f);
  return in;
}

}  // namespace recops::cli
