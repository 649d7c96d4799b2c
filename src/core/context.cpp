#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/dispatch.h"
#include "recops/context.h"

namespace recops {
namespace {
bool initial_validate() {
  if (const char* e = std::getenv("RECOPS_VALIDATE")) return std::strcmp(e, "0") != 0;
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}
std::atomic<bool>& validate_flag() {
  static std::atomic<bool> flag{initial_validate()};
  return flag;
}
}  // namespace

bool validate_enabled() {
  return validate_flag().load(std::memory_order_relaxed);
}
void set_validate(bool on) {
  validate_flag().store(on, std::memory_order_relaxed);
}

namespace core {
bool impl_skipped(const Context& ctx, std::string_view id) {
  for (const auto& s : ctx.skip_impls)
    if (s == id) return true;
  return false;
}
}  // namespace core

}  // namespace recops
