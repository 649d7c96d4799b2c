// Numbers in a case's `tags` (`name=value`): parsed whole, or an exception that names the tag and
// the value ("tag 'window': '3x' is not an integer") instead of std::stoll's bare "stoll".
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace recops::cli {

inline int64_t tag_to_int(const std::string& key, const std::string& v) {
  int64_t out = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, out);
  if (ec == std::errc::result_out_of_range)
    throw std::invalid_argument("tag '" + key + "': '" + v + "' does not fit in int64");
  if (ec != std::errc() || p != end || v.empty())
    throw std::invalid_argument("tag '" + key + "': '" + v + "' is not an integer");
  return out;
}

inline double tag_to_double(const std::string& key, const std::string& v) {
  if (v == "nan") return std::nan("");
  if (v == "inf") return INFINITY;
  if (v == "-inf") return -INFINITY;
  char* end = nullptr;
  double out = v.empty() ? 0.0 : std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size())
    throw std::invalid_argument("tag '" + key + "': '" + v + "' is not a number");
  return out;
}

}  // namespace recops::cli
