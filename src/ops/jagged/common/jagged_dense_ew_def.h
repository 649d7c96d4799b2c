// ops/jagged/common/jagged_dense_ew_def.h: the argument table the forward jagged-dense
// elementwise ops (jagged_dense_elementwise_add, jagged_dense_elementwise_mul) share; each entry
// registers it with its own name, doc and (mul) backward.
#pragma once

#include <vector>

#include "core/kit/op_def.h"
#include "ops/jagged/common/jagged_dense_ew_api.h"

namespace recops::ops {

// kShape/kRun: the op's public shape function and entry.
template <Status (*kShape)(const JaggedDenseElementwiseArgs&, Shape*),
          Status (*kRun)(const JaggedDenseElementwiseArgs&, const TensorView&, const Context&)>
kit::Def<JaggedDenseElementwiseArgs> jd_ew_forward_def(const char* op, const char* doc) {
  using Args = JaggedDenseElementwiseArgs;
  auto shapes = [](const Args& a, std::vector<kit::OutSpec>* outs) -> Status {
    Shape s;
    RECOPS_RETURN_IF_ERROR(kShape(a, &s));
    outs->push_back({s, a.x_values.dtype});
    return Status::Ok();
  };
  auto run = [](const Args& a, const kit::Outputs& o, const Context& ctx) -> Status {
    return kRun(a, o.views[0], ctx);
  };
  kit::Def<Args> def(op, "jagged");
  def.arg<&Args::x_values>("x_values", {.grad = true, .dense_from = 1})
      .arg<&Args::seq_offsets>("seq_offsets",
                               {.py = {.def = "None", .rule = "nested_out x_values"}})
      .arg<&Args::y>("y", {.grad = true, .dense_from = 2})
      .out_like("out", "x_values")
      .shapes(+shapes)
      .run(+run)
      .doc("", doc);
  return def;
}

}  // namespace recops::ops
