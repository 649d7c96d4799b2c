#include "core/scalar.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace recops::core {

Status encode_scalar(std::string_view op, std::string_view arg, double v, DType dtype,
                     uint64_t* bits) {
  *bits = 0;
  auto integral_in = [&](double lo, double hi) -> Status {
    RECOPS_CHECK(std::isfinite(v) && v == std::floor(v), op, ": ", arg, "=", v,
                 " is not an integer; ", dtype_name(dtype), " outputs need an integral ", arg);
    RECOPS_CHECK(v >= lo && v <= hi, op, ": ", arg, "=", v, " does not fit ", dtype_name(dtype),
                 " (range [", lo, ", ", hi, "])");
    return Status::Ok();
  };
  switch (dtype) {
    case DType::fp64: std::memcpy(bits, &v, 8); break;
    case DType::fp32: {
      float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      *bits = u;
      break;
    }
    case DType::fp16: *bits = half_from_double(v).bits; break;
    case DType::bf16: *bits = bf16_from_double(v).bits; break;
    case DType::fp8_e4m3: *bits = fp8_e4m3_from_double(v).bits; break;
    case DType::int32: {
      RECOPS_RETURN_IF_ERROR(integral_in(-2147483648.0, 2147483647.0));
      *bits = static_cast<uint32_t>(static_cast<int32_t>(v));
      break;
    }
    case DType::int64: {
      // doubles beyond 2^63 cannot be held; below that every integral double is exact.
      RECOPS_RETURN_IF_ERROR(integral_in(-9223372036854775808.0, 9223372036854774784.0));
      *bits = static_cast<uint64_t>(static_cast<int64_t>(v));
      break;
    }
    case DType::uint8: {
      RECOPS_RETURN_IF_ERROR(integral_in(0.0, 255.0));
      *bits = static_cast<uint64_t>(v);
      break;
    }
    case DType::boolean: {
      RECOPS_RETURN_IF_ERROR(integral_in(0.0, 1.0));
      *bits = static_cast<uint64_t>(v);
      break;
    }
  }
  return Status::Ok();
}

}  // namespace recops::core
