#include "support/strings.h"

namespace tessera::support {

std::string shape_string(std::span<const int64_t> shape) { return join(shape, "x"); }

int64_t product(std::span<const int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values) p *= v;
  return p;
}

}  // namespace tessera::support
