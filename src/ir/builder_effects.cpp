// Builders of tokens, tuples, composite and map (builder_effects.h).
#include "ir/builder_effects.h"

#include "ir/effects.h"

namespace tessera::ir {

Tensor after_all(Builder& b, const std::vector<Tensor>& tokens) { return b.emit1(OpKind::AfterAll, tokens); }
Tensor create_token(Builder& b) { return b.emit1(OpKind::CreateToken, {}); }
Tensor tuple(Builder& b, const std::vector<Tensor>& values) { return b.emit1(OpKind::Tuple, values); }

Tensor get_tuple_element(const Tensor& t, int64_t index) {
  AttrMap a;
  a.set("index", index);
  return t.builder().emit1(OpKind::GetTupleElement, {t}, std::move(a));
}

std::vector<Tensor> composite(Builder& b, const std::string& name, const Function& decomposition,
                              const std::vector<Tensor>& args, int64_t version) {
  AttrMap a;
  a.set("name", name);
  a.set("decomposition", symbol_ref(decomposition.name()));
  if (version != 0) a.set("version", version);
  return b.emit(OpKind::Composite, args, std::move(a), decomposition.result_types);
}

Tensor map(const std::vector<Tensor>& inputs, ElementType result_element,
           const std::function<Tensor(Builder&, const std::vector<Tensor>&)>& body) {
  TESSERA_CHECK(!inputs.empty(), "map of no inputs");
  Builder& b = inputs[0].builder();
  std::vector<int64_t> dims(inputs[0].type().shape.size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
  AttrMap a;
  a.set("dimensions", dims);
  Type result(result_element, inputs[0].type().shape);
  return b.emit_with_regions(OpKind::Map, inputs, std::move(a), {result}, [&](Op& op) {
    Block& region = op.add_region();
    Builder rb(b.module(), region);
    std::vector<Tensor> args;
    for (const Tensor& x : inputs) args.push_back(rb.wrap(region.add_argument(Type(x.element(), {}))));
    Tensor out = body(rb, args);
    region.append(std::make_unique<Op>(OpKind::Return, std::vector<Value*>{out.value()}, std::vector<Type>{}));
  })[0];
}

}  // namespace tessera::ir
