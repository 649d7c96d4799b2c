// Values in a case's `tags` (`name=value`): numbers parsed whole, names checked against the ones a
// driver reads, or an exception that names the tag and the value ("tag 'window': '3x' is not an
// integer", "tag 'scores': 'zipf' is not one of zero, ...") instead of std::stoll's bare "stoll"
// or a silently ignored value.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

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

// An integer tag with a lower bound (e.g. a page size, paged=PS with PS >= 1).
inline int64_t tag_to_int_at_least(const std::string& key, const std::string& v, int64_t lo) {
  const int64_t x = tag_to_int(key, v);
  if (x < lo)
    throw std::invalid_argument("tag '" + key + "': '" + v +
                                "' is not an integer >= " + std::to_string(lo));
  return x;
}

// A tag whose value must be one of `accepted` (e.g. scores=zero|vbias_j): `v`, or an exception
// naming the tag, the value and the accepted values.
inline const std::string& tag_to_choice(const std::string& key, const std::string& v,
                                        std::initializer_list<std::string_view> accepted) {
  std::string list;
  for (std::string_view a : accepted) {
    if (v == a) return v;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw std::invalid_argument("tag '" + key + "': '" + v + "' is not one of " + list);
}

// A bare tag (e.g. `noncausal`): a value given to it is an error, not ignored.
inline void tag_no_value(const std::string& key, const std::string& v) {
  if (!v.empty())
    throw std::invalid_argument("tag '" + key + "' takes no value, got '" + key + "=" + v + "'");
}

}  // namespace recops::cli
