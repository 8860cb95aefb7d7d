// Error types shared by every layer.
//
// A UserError is something the author of a program can fix: malformed text, a shape mismatch, a
// sharding naming a missing axis. Its message names the thing and the place. An InternalError is a
// broken invariant inside Tessera itself; it is a bug report, never the user's fault.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace tessera::support {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw UserError(fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void internal_failure(const char* file, int line, const std::string& message);

}  // namespace tessera::support

// TESSERA_CHECK guards internal invariants; a failure is an InternalError with the source location.
#define TESSERA_CHECK(cond, ...)                                                       \
  do {                                                                                 \
    if (!(cond))                                                                       \
      ::tessera::support::internal_failure(__FILE__, __LINE__,                         \
                                           std::string("check failed: " #cond " ") +   \
                                               ::fmt::format(__VA_ARGS__));            \
  } while (0)
