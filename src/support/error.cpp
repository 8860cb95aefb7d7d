#include "support/error.h"

namespace tessera::support {

void internal_failure(const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("internal error at {}:{}: {}", file, line, message));
}

}  // namespace tessera::support
