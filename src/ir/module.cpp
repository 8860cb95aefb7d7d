#include "ir/module.h"

#include <utility>

#include <algorithm>
#include <unordered_set>

#include "support/error.h"

namespace tessera::ir {

Value* Block::add_argument(Type type) {
  int index = static_cast<int>(args_.size());
  args_.push_back(std::make_unique<Value>(std::move(type), nullptr, this, index));
  return args_.back().get();
}

Op* Block::append(std::unique_ptr<Op> op) {
  op->parent = this;
  ops_.push_back(std::move(op));
  return ops_.back().get();
}

Op* Block::insert_before(const Op* before, std::unique_ptr<Op> op) {
  auto it = std::find_if(ops_.begin(), ops_.end(),
                         [&](const std::unique_ptr<Op>& o) { return o.get() == before; });
  TESSERA_CHECK(it != ops_.end(), "insert_before: {} is not an op of this block", before->name());
  op->parent = this;
  return ops_.insert(it, std::move(op))->get();
}

void Block::erase_if(const std::function<bool(const Op&)>& pred) {
  std::erase_if(ops_, [&](const std::unique_ptr<Op>& o) { return pred(*o); });
}

std::vector<std::unique_ptr<Op>> Block::take_ops() { return std::exchange(ops_, {}); }

Op* Block::terminator() const { return ops_.empty() ? nullptr : ops_.back().get(); }

Op::Op(OpKind kind, std::vector<Value*> operands, const std::vector<Type>& result_types,
       AttrMap attrs)
    : kind_(kind), operands_(std::move(operands)), attrs_(std::move(attrs)) {
  for (size_t i = 0; i < result_types.size(); ++i)
    results_.push_back(std::make_unique<Value>(result_types[i], this, nullptr, static_cast<int>(i)));
}

void Op::set_operand(size_t i, Value* v) {
  TESSERA_CHECK(i < operands_.size() && v != nullptr, "set_operand({}) of {}", i, name());
  TESSERA_CHECK(v->type() == operands_[i]->type(), "set_operand({}) of {} changes its type", i,
                name());
  operands_[i] = v;
}

std::vector<Value*> Op::results() const {
  std::vector<Value*> out;
  for (const auto& r : results_) out.push_back(r.get());
  return out;
}

std::vector<Type> Op::operand_types() const {
  std::vector<Type> out;
  for (const Value* v : operands_) out.push_back(v->type());
  return out;
}

std::vector<Type> Op::result_types() const {
  std::vector<Type> out;
  for (const auto& r : results_) out.push_back(r->type());
  return out;
}

Block& Op::add_region() {
  regions_.push_back(std::make_unique<Block>());
  regions_.back()->parent_op = this;
  return *regions_.back();
}

Block& Op::adopt_region(std::unique_ptr<Block> block) {
  block->parent_op = this;
  regions_.push_back(std::move(block));
  return *regions_.back();
}

Value* Function::add_parameter(Type type, std::optional<Sharding> sharding) {
  AttrMap attrs;
  if (sharding) attrs.set("sdy.sharding", *sharding);
  arg_attrs.push_back(std::move(attrs));
  return body_.add_argument(std::move(type));
}

std::optional<Sharding> Function::arg_sharding(size_t i) const {
  if (i >= arg_attrs.size()) return std::nullopt;
  const Sharding* s = arg_attrs[i].find<Sharding>("sdy.sharding");
  return s ? std::optional<Sharding>(*s) : std::nullopt;
}

std::optional<Sharding> Function::result_sharding(size_t i) const {
  if (i >= result_attrs.size()) return std::nullopt;
  const Sharding* s = result_attrs[i].find<Sharding>("sdy.sharding");
  return s ? std::optional<Sharding>(*s) : std::nullopt;
}

void Function::set_result_sharding(size_t i, Sharding s) {
  if (result_attrs.size() <= i) result_attrs.resize(i + 1);
  result_attrs[i].set("sdy.sharding", std::move(s));
}

void Function::set_results(const std::vector<Value*>& values) {
  result_types.clear();
  for (const Value* v : values) result_types.push_back(v->type());
  result_attrs.resize(values.size());
  body_.append(std::make_unique<Op>(OpKind::Return, values, std::vector<Type>{}));
}

const Mesh& Module::add_mesh(Mesh mesh) {
  validate(mesh);
  if (find_mesh(mesh.name) != nullptr) support::fail("mesh @{} is declared twice", mesh.name);
  meshes.push_back(std::move(mesh));
  return meshes.back();
}

const Mesh* Module::find_mesh(std::string_view n) const {
  for (const Mesh& m : meshes)
    if (m.name == n) return &m;
  return nullptr;
}

const Mesh& Module::mesh(std::string_view n) const {
  const Mesh* m = find_mesh(n);
  if (m == nullptr) support::fail("mesh @{} is not declared in the module", n);
  return *m;
}

Function& Module::add_function(std::string n) {
  if (find_function(n) != nullptr) support::fail("function @{} is defined twice", n);
  functions.push_back(std::make_unique<Function>(std::move(n)));
  return *functions.back();
}

void Module::remove_function(const Function& fn) {
  std::erase_if(functions, [&](const std::unique_ptr<Function>& f) { return f.get() == &fn; });
}

Function* Module::find_function(std::string_view n) const {
  for (const auto& f : functions)
    if (f->name() == n) return f.get();
  return nullptr;
}

std::optional<OpKind> region_combiner(const Op& op, size_t region) {
  if (region >= op.regions().size()) return std::nullopt;
  const Block& body = op.region(region);
  if (body.ops().size() != 2 || body.arguments().size() != 2) return std::nullopt;
  const Op& combine = *body.ops()[0];
  const Op& ret = *body.ops()[1];
  if (combine.operands().size() != 2 || ret.operands().size() != 1 || ret.operand(0) != combine.result())
    return std::nullopt;
  const Value* a = combine.operand(0);
  const Value* b = combine.operand(1);
  bool args = (a == body.argument(0) && b == body.argument(1)) || (a == body.argument(1) && b == body.argument(0));
  return args ? std::optional<OpKind>(combine.kind()) : std::nullopt;
}

std::vector<const Value*> captures_of(const Op& op) {
  std::unordered_set<const Value*> inside;
  std::vector<const Value*> out;
  std::unordered_set<const Value*> seen;
  auto define = [&](const Block& b, auto& self) -> void {
    for (const auto& a : b.arguments()) inside.insert(a.get());
    for (const auto& o : b.ops()) {
      for (size_t r = 0; r < o->num_results(); ++r) inside.insert(o->result(r));
      for (const auto& region : o->regions()) self(*region, self);
    }
  };
  auto read = [&](const Block& b, auto& self) -> void {
    for (const auto& o : b.ops()) {
      for (const Value* v : o->operands())
        if (!inside.count(v) && seen.insert(v).second) out.push_back(v);
      for (const auto& region : o->regions()) self(*region, self);
    }
  };
  for (const auto& region : op.regions()) define(*region, define);
  for (const auto& region : op.regions()) read(*region, read);
  return out;
}

}  // namespace tessera::ir
