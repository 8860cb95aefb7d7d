// Shape refinement (see refine_shapes.h): the entry function rebuilt op by op for concrete argument
// types, with calls inlined, shape computations folded and each dynamic op made static.
#include "transforms/refine_shapes.h"

#include <unordered_map>

#include "interp/interpreter.h"
#include "ir/clone.h"
#include "ir/dynamic_shapes.h"
#include "ir/shape_rules.h"
#include "support/error.h"
#include "transforms/simplify.h"

namespace tessera::transforms {
namespace {

using ir::Block;
using ir::Literal;
using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

// Rules that read their result from the declared type (convert, bitcast_convert, broadcast_in_dim,
// reshape, map, uniform_quantize) cannot say what a declared '?' is; once the operand is static
// it is fixed by the spec's constraints: convert, map and (de)quantization keep the operand's shape; bitcast_convert adds or drops the last
// dimension by the ratio of the bit widths (C1); broadcast_in_dim's result dimension
// broadcast_dimensions[i] is the operand's dimension i unless that is 1 (C2); and reshape's one '?'
// is what makes the element counts equal (C1). Dimensions these leave unknown stay '?'.
Type fill_declared(OpKind kind, const Type& in, Type out, const ir::AttrMap& attrs) {
  if (out.is_static() || !in.is_static() || !out.is_tensor() || !in.is_tensor()) return out;
  auto fill = [&](const std::vector<int64_t>& shape) {
    if (shape.size() != out.shape.size()) return;
    for (size_t d = 0; d < shape.size(); ++d)
      if (out.shape[d] == ir::kDynamic) out.shape[d] = shape[d];
  };
  if (kind == OpKind::Convert || kind == OpKind::Map || kind == OpKind::UniformQuantize ||
      kind == OpKind::UniformDequantize) {
    fill(in.shape);
  } else if (kind == OpKind::BitcastConvert) {
    int a = ir::info(in.element).bits, b = ir::info(out.element).bits;
    std::vector<int64_t> shape = in.shape;
    if (a > b) shape.push_back(a / b);
    else if (a < b && !shape.empty()) shape.pop_back();
    fill(shape);
  } else if (kind == OpKind::BroadcastInDim) {
    if (const auto* dims = attrs.find<std::vector<int64_t>>("broadcast_dimensions"))
      for (size_t i = 0; i < dims->size() && i < in.shape.size(); ++i) {
        auto d = static_cast<size_t>((*dims)[i]);
        if (d < out.shape.size() && out.shape[d] == ir::kDynamic && in.shape[i] != 1) out.shape[d] = in.shape[i];
      }
  } else if (kind == OpKind::Reshape) {
    int64_t known = 1, unknown = 0;
    for (int64_t d : out.shape) {
      if (d == ir::kDynamic) ++unknown;
      else known *= d;
    }
    if (unknown == 1 && known > 0 && in.num_elements() % known == 0)
      for (int64_t& d : out.shape)
        if (d == ir::kDynamic) d = in.num_elements() / known;
  }
  if (out.is_static()) out.bounds.clear();
  return out;
}

bool is_shape_value(const Type& t) {
  return t.is_tensor() && t.is_static() && (ir::is_integer(t.element) || ir::is_bool(t.element)) &&
         t.num_elements() <= kMaxShapeElements;
}

std::string where(const Op& op) {
  return op.loc.line > 0 ? fmt::format("{} (line {})", op.name(), op.loc.line) : std::string(op.name());
}

// Same element type and rank, and equal sizes where both are static.
bool compatible(const Type& a, const Type& b) {
  if (!a.is_tensor() || !b.is_tensor()) return a == b;
  if (a.element != b.element || a.rank() != b.rank()) return false;
  for (int64_t d = 0; d < a.rank(); ++d)
    if (a.dim(d) != ir::kDynamic && b.dim(d) != ir::kDynamic && a.dim(d) != b.dim(d)) return false;
  return true;
}

class Refiner {
 public:
  explicit Refiner(const ir::Module& module) : module_(module) {}

  // `v` (a parameter) will hold `value` when the function runs.
  void know(const Value* v, const Literal& value) {
    if (is_shape_value(v->type())) known_.emplace(v, value);
  }

  // Rebuilds the ops of `from` into `into`; the terminator too when `with_terminator`.
  void block(const Block& from, Block& into, ir::ValueMap& map, int depth, bool with_terminator) {
    for (const auto& up : from.ops()) {
      const Op& op = *up;
      if (op.kind() == OpKind::Return) {
        if (with_terminator) append(into, op, OpKind::Return, operands(op, map), {}, op.attrs());
        break;
      }
      if (op.kind() == OpKind::Call) inline_call(op, into, map, depth);
      else if (op.kind() == OpKind::GetDimensionSize) dimension_size(op, into, map);
      else if (op.kind() == OpKind::CustomCall && is_shape_assertion(op)) shape_assertion(op, map);
      else if (ir::is_dynamic_shape_op(op.kind())) dynamic(op, into, map);
      else other(op, into, map, depth);
    }
  }

 private:
  const ir::Module& module_;
  std::unordered_map<const Value*, Literal> known_;  // values of small integer values (new ones)

  static Value* get(const ir::ValueMap& map, const Value* v) {
    auto it = map.find(v);
    TESSERA_CHECK(it != map.end(), "refine_shapes: a value used before it is defined");
    return it->second;
  }
  static std::vector<Value*> operands(const Op& op, const ir::ValueMap& map) {
    std::vector<Value*> out;
    for (const Value* v : op.operands()) out.push_back(get(map, v));
    return out;
  }
  static bool is_shape_assertion(const Op& op) {
    const auto* t = op.attrs().find<std::string>("call_target_name");
    return t != nullptr && *t == "shape_assertion";
  }
  const Literal* value(const Value* v) const {
    auto it = known_.find(v);
    return it == known_.end() ? nullptr : &it->second;
  }

  Op* append(Block& into, const Op& old, OpKind kind, std::vector<Value*> ops, const std::vector<Type>& types,
             ir::AttrMap attrs) {
    Op* op = into.append(std::make_unique<Op>(kind, std::move(ops), types, std::move(attrs)));
    op->loc = old.loc;
    return op;
  }
  Value* constant(Block& into, const Op& old, Literal v) {
    ir::AttrMap attrs;
    Type t = v.type();
    attrs.set("value", v);
    Value* out = append(into, old, OpKind::Constant, {}, {t}, std::move(attrs))->result();
    known_.emplace(out, std::move(v));
    return out;
  }

  void inline_call(const Op& op, Block& into, ir::ValueMap& map, int depth) {
    if (depth > 64) support::fail("{}: calls nest more than 64 deep (recursion?)", where(op));
    const auto& name = op.attrs().get<std::string>("callee");
    const ir::Function* callee = module_.find_function(name);
    if (callee == nullptr) support::fail("{}: no function @{}", where(op), name);
    if (callee->num_parameters() != op.operands().size())
      support::fail("{}: @{} takes {} arguments, given {}", where(op), name, callee->num_parameters(),
                    op.operands().size());
    for (size_t i = 0; i < callee->num_parameters(); ++i) {
      Value* arg = get(map, op.operand(i));
      if (!compatible(arg->type(), callee->parameter(i)->type()))
        support::fail("{}: argument {} of @{} is {}, its parameter is {}", where(op), i, name,
                      ir::to_string(arg->type()), ir::to_string(callee->parameter(i)->type()));
      map[callee->parameter(i)] = arg;
    }
    block(callee->body(), into, map, depth + 1, false);
    const Op* ret = callee->body().terminator();
    for (size_t i = 0; i < op.num_results(); ++i) map[op.result(i)] = get(map, ret->operand(i));
  }

  void dimension_size(const Op& op, Block& into, ir::ValueMap& map) {
    const Type& t = get(map, op.operand(0))->type();
    int64_t d = op.attrs().get<int64_t>("dimension");
    if (d < 0 || d >= t.rank() || t.dim(d) == ir::kDynamic)
      support::fail("{}: dimension {} of {} is not known after refinement", where(op), d, ir::to_string(t));
    map[op.result()] = constant(into, op, Literal::scalar(ir::ElementType::i32, static_cast<double>(t.dim(d))));
  }

  void shape_assertion(const Op& op, const ir::ValueMap& map) {
    std::vector<const Literal*> values;
    for (const Value* v : op.operands()) {
      const Literal* x = value(get(map, v));
      if (x == nullptr)
        support::fail("{}: operand {} of @shape_assertion is not a constant after refinement", where(op),
                      values.size());
      values.push_back(x);
    }
    ir::check_shape_assertion(op.attrs(), values);
  }

  void dynamic(const Op& op, Block& into, ir::ValueMap& map) {
    std::vector<Value*> ops = operands(op, map);
    std::vector<Type> types;
    std::vector<const Literal*> values;
    for (Value* v : ops) {
      types.push_back(v->type());
      values.push_back(value(v));
    }
    std::optional<ir::StaticForm> f = ir::static_form(op.kind(), op.attrs(), types, op.result()->type(), values);
    if (!f) {
      for (size_t i : ir::shape_operands(op.kind()))
        if (values[i] == nullptr)
          support::fail("{}: shape operand {} is not a constant after refinement (only integer computations of "
                        "at most {} elements on constants and dimension sizes are folded)",
                        where(op), i, kMaxShapeElements);
      support::fail("{}: an operand's type is still dynamic after refinement", where(op));
    }
    std::vector<Value*> taken;
    for (size_t i : f->operands) taken.push_back(ops[i]);
    Op* s = append(into, op, f->kind, taken, {f->result}, std::move(f->attrs));
    map[op.result()] = s->result();
    fold(*s, into, map, op);
  }

  // The op's result types from its shape rule on the refined operands.
  std::vector<Type> result_types(const Op& op, OpKind kind, const std::vector<Type>& in,
                                 std::vector<Type> declared, const ir::AttrMap& attrs) {
    if (declared.size() == 1 && !in.empty()) declared[0] = fill_declared(kind, in[0], declared[0], attrs);
    std::vector<Type> got = ir::infer_result_types(ir::ShapeQuery{kind, in, attrs, declared});
    if (got.size() != op.num_results())
      support::fail("{}: gives {} results after refinement, declares {}", where(op), got.size(), op.num_results());
    for (size_t i = 0; i < got.size(); ++i)
      if (!compatible(got[i], op.result(i)->type()))
        support::fail("{}: result {} is {} after refinement, incompatible with its declared {}", where(op), i,
                      ir::to_string(got[i]), ir::to_string(op.result(i)->type()));
    return got;
  }

  void other(const Op& op, Block& into, ir::ValueMap& map, int depth) {
    std::vector<Value*> ops = operands(op, map);
    std::vector<Type> in;
    for (Value* v : ops) in.push_back(v->type());
    std::vector<std::unique_ptr<Block>> regions;
    for (const auto& r : op.regions()) {
      auto b = std::make_unique<Block>();
      for (const auto& a : r->arguments()) {
        Type t = a->type();
        // A while loop's carried values have its operands' refined types.
        if (op.kind() == OpKind::While && static_cast<size_t>(a->index()) < in.size()) t = in[a->index()];
        map[a.get()] = b->add_argument(t);
      }
      block(*r, *b, map, depth, true);
      regions.push_back(std::move(b));
    }
    std::vector<Type> declared = op.result_types();
    if (op.kind() == OpKind::While) declared = in;
    if ((op.kind() == OpKind::If || op.kind() == OpKind::Case) && !regions.empty())
      declared = regions[0]->terminator()->operand_types();
    std::vector<Type> types = result_types(op, op.kind(), in, declared, op.attrs());
    auto copy = std::make_unique<Op>(op.kind(), ops, types, op.attrs());
    copy->loc = op.loc;
    for (auto& r : regions) copy->adopt_region(std::move(r));
    Op* out = into.append(std::move(copy));
    for (size_t i = 0; i < op.num_results(); ++i) map[op.result(i)] = out->result(i);
    if (op.kind() == OpKind::Constant) {
      if (is_shape_value(types[0])) known_.emplace(out->result(), op.attrs().get<Literal>("value"));
      return;
    }
    fold(*out, into, map, op);
  }

  // A pure op of small integer values on known operands is replaced by constants of its results,
  // computed by the reference interpreter (as fold_constants does).
  void fold(Op& op, Block& into, ir::ValueMap& map, const Op& old) {
    // Ops without operands (iota) stay: folding them would only make them longer to read.
    if (!ir::has_trait(op.kind(), ir::kPure) || !op.regions().empty() || op.num_results() == 0 || op.operands().empty())
      return;
    for (const Value* v : op.operands())
      if (value(v) == nullptr) return;
    for (const Value* r : op.results())
      if (!is_shape_value(r->type())) return;
    ir::Function scratch("refine");
    ir::ValueMap m;
    for (const Value* v : op.operands())
      if (!m.count(v)) {
        ir::AttrMap attrs;
        attrs.set("value", *value(v));
        m[v] = scratch.body().append(std::make_unique<Op>(OpKind::Constant, std::vector<Value*>{},
                                                          std::vector<Type>{v->type()}, std::move(attrs)))->result();
      }
    const Op* copy = ir::clone_op(scratch.body(), op, m);
    scratch.set_results(copy->results());
    std::vector<Literal> values;
    try {
      values = interp::evaluate(scratch, {});
    } catch (const support::UserError&) {
      return;  // left as it is; a shape operand that needs it is reported where it is used
    }
    for (size_t i = 0; i < values.size(); ++i) map[old.result(i)] = constant(into, old, std::move(values[i]));
  }
};

void check_static(const Block& b, const std::string& fn) {
  for (const auto& a : b.arguments())
    if (!a->type().is_static())
      support::fail("refine_shapes: @{}: a region argument is still {} after refinement", fn, ir::to_string(a->type()));
  for (const auto& op : b.ops()) {
    for (size_t i = 0; i < op->num_results(); ++i)
      if (!op->result(i)->type().is_static())
        support::fail("refine_shapes: @{}: result {} of {} is still {} after refinement", fn, i, where(*op),
                      ir::to_string(op->result(i)->type()));
    for (const auto& r : op->regions()) check_static(*r, fn);
  }
}

bool block_dynamic(const Block& b) {
  for (const auto& a : b.arguments())
    if (!a->type().is_static()) return true;
  for (const auto& op : b.ops()) {
    for (const Value* r : op->results())
      if (!r->type().is_static()) return true;
    if (op->kind() == OpKind::GetDimensionSize || ir::is_dynamic_shape_op(op->kind())) return true;
    for (const auto& r : op->regions())
      if (block_dynamic(*r)) return true;
  }
  return false;
}

}  // namespace

bool has_dynamic_types(const ir::Function& f) {
  for (const Type& t : f.result_types)
    if (!t.is_static()) return true;
  return block_dynamic(f.body());
}

void refine_shapes(ir::Module& module, const std::string& entry, std::span<const Type> arg_types,
                   std::span<const Literal> arg_values) {
  ir::Function* fn = module.find_function(entry);
  if (fn == nullptr) support::fail("refine_shapes: no function @{}", entry);
  if (arg_types.size() != fn->num_parameters())
    support::fail("refine_shapes: @{} takes {} arguments, given {} types", entry, fn->num_parameters(),
                  arg_types.size());
  if (!arg_values.empty() && arg_values.size() != arg_types.size())
    support::fail("refine_shapes: @{} is given {} argument values for {} arguments", entry, arg_values.size(),
                  arg_types.size());
  Refiner refiner(module);
  ir::Module scratch;
  ir::Function& out = scratch.add_function(entry);
  out.is_public = fn->is_public;
  out.loc = fn->loc;
  ir::ValueMap map;
  for (size_t i = 0; i < fn->num_parameters(); ++i) {
    const Type& p = fn->parameter(i)->type();
    const Type& a = arg_types[i];
    if (!a.is_static() || !compatible(a, p))
      support::fail("refine_shapes: argument {} of @{} is {}, which does not fit its parameter type {}", i, entry,
                    ir::to_string(a), ir::to_string(p));
    for (size_t d = 0; d < p.bounds.size(); ++d)
      if (p.bounds[d] != ir::kDynamic && a.dim(static_cast<int64_t>(d)) > p.bounds[d])
        support::fail("refine_shapes: argument {} of @{} is {}: dimension {} exceeds its bound {} in {}", i, entry,
                      ir::to_string(a), d, p.bounds[d], ir::to_string(p));
    Type t = a;
    t.quant = p.quant;
    Value* param = out.add_parameter(t);
    map[fn->parameter(i)] = param;
    out.arg_attrs[i] = fn->arg_attrs[i];
    if (!arg_values.empty()) {
      if (!(arg_values[i].type() == a))
        support::fail("refine_shapes: argument {} of @{} is given a value of type {}, not {}", i, entry,
                      ir::to_string(arg_values[i].type()), ir::to_string(a));
      refiner.know(param, arg_values[i]);
    }
  }
  refiner.block(fn->body(), out.body(), map, 0, true);
  out.result_types = out.body().terminator()->operand_types();
  out.result_attrs = fn->result_attrs;
  out.result_attrs.resize(out.result_types.size());
  for (size_t i = 0; i < out.result_types.size(); ++i)
    if (!compatible(out.result_types[i], fn->result_types.at(i)))
      support::fail("refine_shapes: @{} returns {} as result {}, incompatible with its declared {}", entry,
                    ir::to_string(out.result_types[i]), i, ir::to_string(fn->result_types[i]));
  eliminate_dead_code(out);
  check_static(out.body(), entry);
  // The refined function takes the place of the old one.
  for (auto& f : module.functions)
    if (f.get() == fn) f = std::move(scratch.functions.front());
}

}  // namespace tessera::transforms
