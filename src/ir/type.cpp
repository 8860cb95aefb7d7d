#include "ir/type.h"

#include <algorithm>

#include "ir/quantize.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::ir {

Type Type::token() {
  Type t;
  t.kind = TypeKind::kToken;
  return t;
}

Type Type::tuple(std::vector<Type> members) {
  Type t;
  t.kind = TypeKind::kTuple;
  t.elements = std::move(members);
  return t;
}

Type Type::future(std::vector<Type> members) {
  Type t = tuple(std::move(members));
  t.kind = TypeKind::kFuture;
  return t;
}

bool Type::is_static() const {
  if (kind == TypeKind::kTensor) return std::none_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; });
  return std::all_of(elements.begin(), elements.end(), [](const Type& m) { return m.is_static(); });
}

int64_t Type::num_elements() const {
  if (kind == TypeKind::kToken) return 0;
  if (kind != TypeKind::kTensor) support::fail("{} is not a tensor: it has no element count", to_string(*this));
  if (!is_static())
    support::fail("{} has a dynamic ('?') dimension: run with concrete input shapes so that shapes are refined first",
                  to_string(*this));
  return support::product(shape);
}

bool Type::operator==(const Type& o) const {
  if (kind != o.kind || element != o.element || shape != o.shape || elements != o.elements || bounds != o.bounds)
    return false;
  if ((quant == nullptr) != (o.quant == nullptr)) return false;
  return quant == nullptr || *quant == *o.quant;
}

std::string to_string(const Type& t) {
  switch (t.kind) {
    case TypeKind::kToken: return "!stablehlo.token";
    case TypeKind::kTuple:
    case TypeKind::kFuture: {
      std::string s = t.kind == TypeKind::kTuple ? "tuple<" : "!stablehlo.future<";
      for (size_t i = 0; i < t.elements.size(); ++i) s += (i ? ", " : "") + to_string(t.elements[i]);
      return s + ">";
    }
    case TypeKind::kTensor: break;
  }
  std::string s = "tensor<";
  for (int64_t d : t.shape) s += d < 0 ? std::string("?x") : fmt::format("{}x", d);
  s += t.quant ? to_string(*t.quant) : std::string(spelling(t.element));
  if (!t.bounds.empty()) {
    s += ", #stablehlo.bounds<";
    for (size_t i = 0; i < t.bounds.size(); ++i)
      s += (i ? ", " : "") + (t.bounds[i] < 0 ? std::string("?") : std::to_string(t.bounds[i]));
    s += ">";
  }
  return s + ">";
}

}  // namespace tessera::ir
