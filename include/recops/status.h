// recops/status.h: errors as values. Every failure carries a reason that names the op, the
// argument and the broken rule; the library never aborts on bad input.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

namespace recops {

enum class StatusCode : uint8_t {
  ok,
  invalid_argument,  // the caller broke a documented rule
  not_implemented,   // every implementation refused (reasons listed)
  out_of_range,      // a size or value overflows what the op can produce (e.g. int32 offsets)
  cuda_error,        // the CUDA runtime reported an error
  internal,          // a bug in recops
  type_error,        // an argument has a dtype (or kind) the op does not take (Python: TypeError)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  explicit operator bool() const { return ok(); }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

const char* status_code_name(StatusCode c);

// Thrown only by the convenience layer for callers who prefer exceptions (the CLI, tests);
// the library itself returns Status.
class Error : public std::exception {
 public:
  explicit Error(Status s) : status_(std::move(s)) {}
  const char* what() const noexcept override { return status_.message().c_str(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void throw_if_error(const Status& s) {
  if (!s.ok()) throw Error(s);
}

namespace detail {
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace recops

// RECOPS_CHECK(cond, parts...): return an invalid_argument Status built from parts if !cond.
// RECOPS_CHECK_TYPE(cond, reason...): the same, with StatusCode::type_error (a wrong dtype).
#define RECOPS_CHECK_TYPE(cond, ...)                               \
  do {                                                             \
    if (!(cond))                                                   \
      return ::recops::Status(::recops::StatusCode::type_error,    \
                              ::recops::detail::cat(__VA_ARGS__)); \
  } while (0)

#define RECOPS_CHECK(cond, ...)                                       \
  do {                                                                \
    if (!(cond))                                                      \
      return ::recops::Status(::recops::StatusCode::invalid_argument, \
                              ::recops::detail::cat(__VA_ARGS__));    \
  } while (0)

// RECOPS_RETURN_IF_ERROR(expr): propagate a failed Status.
#define RECOPS_RETURN_IF_ERROR(expr)         \
  do {                                       \
    ::recops::Status _recops_st = (expr);    \
    if (!_recops_st.ok()) return _recops_st; \
  } while (0)
