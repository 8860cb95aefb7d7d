// Builder core: emitting ops through their shape rules, constants, and functions.
#include "ir/builder.h"

#include "ir/shape_rules.h"

namespace tessera::ir {

std::vector<Tensor> Builder::emit_with_regions(OpKind kind, const std::vector<Tensor>& operands,
                                               AttrMap attrs, std::vector<Type> declared,
                                               const std::function<void(Op&)>& fill) {
  std::vector<Value*> values;
  std::vector<Type> types;
  for (const Tensor& t : operands) {
    values.push_back(t.value());
    types.push_back(t.type());
  }
  std::vector<Type> results = infer_result_types(ShapeQuery{kind, types, attrs, declared});
  auto op = std::make_unique<Op>(kind, std::move(values), results, std::move(attrs));
  if (fill) fill(*op);
  Op* placed = block_->append(std::move(op));
  std::vector<Tensor> out;
  for (Value* v : placed->results()) out.emplace_back(v, this);
  return out;
}

std::vector<Tensor> Builder::emit(OpKind kind, const std::vector<Tensor>& operands, AttrMap attrs,
                                  std::vector<Type> declared) {
  return emit_with_regions(kind, operands, std::move(attrs), std::move(declared), nullptr);
}

Tensor Builder::emit1(OpKind kind, const std::vector<Tensor>& operands, AttrMap attrs,
                      std::vector<Type> declared) {
  std::vector<Tensor> r = emit(kind, operands, std::move(attrs), std::move(declared));
  TESSERA_CHECK(r.size() == 1, "{} gave {} results", spelling(kind), r.size());
  return r[0];
}

Tensor Builder::constant(Literal value) {
  AttrMap a;
  a.set("value", std::move(value));
  return emit1(OpKind::Constant, {}, std::move(a));
}

Tensor Builder::scalar(ElementType e, double v) { return constant(Literal::scalar(e, v)); }

Tensor Builder::iota(Type type, int64_t dimension) {
  AttrMap a;
  a.set("iota_dimension", dimension);
  return emit1(OpKind::Iota, {}, std::move(a), {std::move(type)});
}

Tensor Builder::replica_id() { return emit1(OpKind::ReplicaId, {}); }
Tensor Builder::partition_id() { return emit1(OpKind::PartitionId, {}); }

Tensor FunctionBuilder::param(Type type, std::optional<Sharding> sharding) {
  if (sharding) {
    std::string what = fmt::format("argument {} of @{}", fn_->num_parameters(), fn_->name());
    validate(*sharding, module().mesh(sharding->mesh), type, what);
  }
  return wrap(fn_->add_parameter(std::move(type), std::move(sharding)));
}

Function& build_function(Module& module, std::string name,
                         const std::function<std::vector<Tensor>(FunctionBuilder&)>& body) {
  Function& fn = module.add_function(std::move(name));
  FunctionBuilder b(module, fn);
  std::vector<Tensor> results = body(b);
  std::vector<Value*> values;
  for (const Tensor& t : results) values.push_back(t.value());
  fn.set_results(values);
  return fn;
}

}  // namespace tessera::ir
