// jagged/jagged_dense_elementwise_add/driver.cpp: the `recops` CLI driver, the jagged-dense
// elementwise ops' shared one (its case fields: ops/jagged/common/driver_jagged_dense_ew.h).
#include "ops/jagged/common/driver_jagged_dense_ew.h"
#include "ops/jagged/jagged_dense_elementwise_add/jagged_dense_elementwise_add.h"

namespace recops::cli {
namespace {
class AddDriver final : public JaggedDenseEwDriver {
 public:
  AddDriver() : JaggedDenseEwDriver("jagged_dense_elementwise_add", "") {}
  Status run(const Problem&, const std::vector<TensorView>& in, const std::vector<TensorView>& out,
             const Context& ctx) const override {
    return jagged_dense_elementwise_add({in[0], in[1], in[2]}, out[0], ctx);
  }
};
}  // namespace

RECOPS_REGISTER_DRIVER(AddDriver);

}  // namespace recops::cli
