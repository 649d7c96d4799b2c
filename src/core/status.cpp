#include "recops/status.h"

namespace recops {

const char* status_code_name(StatusCode c) {
  switch (c) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid_argument";
    case StatusCode::type_error: return "type_error";
    case StatusCode::not_implemented: return "not_implemented";
    case StatusCode::out_of_range: return "out_of_range";
    case StatusCode::cuda_error: return "cuda_error";
    case StatusCode::internal: return "internal";
  }
  return "?";
}

}  // namespace recops
