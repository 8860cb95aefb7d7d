#include "ir/type.h"

#include "support/strings.h"

namespace tessera::ir {

int64_t Type::num_elements() const { return support::product(shape); }

std::string to_string(const Type& t) {
  std::string s = "tensor<";
  for (int64_t d : t.shape) s += fmt::format("{}x", d);
  s += spelling(t.element);
  return s + ">";
}

}  // namespace tessera::ir
