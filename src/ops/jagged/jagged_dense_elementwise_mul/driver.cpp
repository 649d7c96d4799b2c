// jagged/jagged_dense_elementwise_mul/driver.cpp: the `recops` CLI driver of the op and its
// backward, the jagged-dense elementwise ops' shared one (its case fields:
// ops/jagged/common/driver_jagged_dense_ew.h).
#include "ops/jagged/common/driver_jagged_dense_ew.h"
#include "ops/jagged/jagged_dense_elementwise_mul/jagged_dense_elementwise_mul.h"

namespace recops::cli {
namespace {
class MulDriver final : public JaggedDenseEwDriver {
 public:
  MulDriver()
      : JaggedDenseEwDriver("jagged_dense_elementwise_mul", "jagged_dense_elementwise_mul_bwd") {}
  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "jagged_dense_elementwise_mul")
      return jagged_dense_elementwise_mul({in[0], in[1], in[2]}, out[0], ctx);
    return jagged_dense_elementwise_mul_bwd({in[0], in[1], in[2], in[3]}, out[0], out[1], ctx);
  }
};
}  // namespace

RECOPS_REGISTER_DRIVER(MulDriver);

}  // namespace recops::cli
