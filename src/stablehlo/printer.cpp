// The module, function and region layout of the printed text, and the names of values.
//
//   module @name attributes {mhlo.num_partitions = 4 : i32} {
//     sdy.mesh @m = <["data"=4]>
//     func.func public @f(%arg0: tensor<8x4xf32> {sdy.sharding = ...}, %arg1: ...) -> tensor<f32> {
//       %0 = ...
//       return %0 : tensor<f32>
//     }
//   }
//
// Two spaces per nesting level, as MLIR indents. Value names follow MLIR's AsmPrinter (see Names
// in print_internal.h), so a module JAX printed and we parsed prints back the same.
#include "stablehlo/printer.h"

#include "stablehlo/print_internal.h"
#include "support/strings.h"

namespace tessera::stablehlo {
namespace print_impl {

// ---- Names ----

struct Names::State {
  int next_value = 0;
  int next_argument = 0;
  int next_conflict = 0;
};

namespace {

// The names in scope while a region is numbered: those of the regions around it, then its own.
// A region's names go out of scope when it and the regions inside it are done, so sibling
// regions may reuse them (MLIR's scoped name table).
class Scope {
 public:
  explicit Scope(std::unordered_set<std::string>& used) : used_(used) {}
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope() {
    for (const std::string& n : added_) used_.erase(n);
  }
  // `name`, or `name_K` with the next free conflict number K when `name` is taken.
  std::string unique(const std::string& name, int& next_conflict) {
    std::string n = name;
    while (used_.count(n) != 0) n = fmt::format("{}_{}", name, next_conflict++);
    used_.insert(n);
    added_.push_back(n);
    return n;
  }

 private:
  std::unordered_set<std::string>& used_;
  std::vector<std::string> added_;
};

}  // namespace

Names::Names(const ir::Function& fn) { number_region(fn.body(), State{}); }

void Names::number_region(const ir::Block& block, State state) {
  Scope scope(used_);
  bool loop = block.parent_op != nullptr && block.parent_op->kind() == ir::OpKind::While;
  for (const auto& arg : block.arguments()) {
    std::string name = loop ? "iterArg" : fmt::format("arg{}", state.next_argument++);
    arg_names_[arg.get()] = scope.unique(name, state.next_conflict);
  }
  for (const auto& op : block.ops()) {
    if (op->num_results() == 0) continue;
    if (op->kind() == ir::OpKind::Constant) {
      ir::ElementType e = op->result()->type().element;
      std::string name = ir::is_integer(e) || ir::is_bool(e) ? "c" : "cst";
      op_names_[op.get()] = scope.unique(name, state.next_conflict);
    } else {
      op_names_[op.get()] = std::to_string(state.next_value++);
    }
  }
  // Inner regions continue from where this whole region ended, each from the same point.
  for (const auto& op : block.ops())
    for (const auto& region : op->regions()) number_region(*region, state);
}

std::string Names::use(const ir::Value* v) const {
  if (const ir::Op* op = v->defining_op()) {
    auto it = op_names_.find(op);
    TESSERA_CHECK(it != op_names_.end(), "value of {} used outside its function", op->name());
    if (op->num_results() == 1) return "%" + it->second;
    return fmt::format("%{}#{}", it->second, v->index());
  }
  auto it = arg_names_.find(v);
  TESSERA_CHECK(it != arg_names_.end(), "block argument used outside its function");
  return "%" + it->second;
}

std::string Names::def(const ir::Op& op) const {
  const std::string& name = op_names_.at(&op);
  if (op.num_results() == 1) return "%" + name;
  return fmt::format("%{}:{}", name, op.num_results());
}

// ---- Printer ----

void Printer::newline() {
  out_ += '\n';
  out_.append(static_cast<size_t>(indent_), ' ');
}

void Printer::values(const std::vector<ir::Value*>& vs, size_t from) {
  for (size_t i = from; i < vs.size(); ++i) {
    if (i > from) out_ += ", ";
    out_ += names_.use(vs[i]);
  }
}

void Printer::types(const std::vector<ir::Type>& ts) {
  for (size_t i = 0; i < ts.size(); ++i) out_ += (i ? ", " : "") + ir::to_string(ts[i]);
}

void Printer::functional_type(const ir::Op& op) {
  out_ += "(";
  types(op.operand_types());
  out_ += ") -> ";
  bool wrap = op.num_results() != 1;
  if (wrap) out_ += "(";
  types(op.result_types());
  if (wrap) out_ += ")";
}

void Printer::block_argument(const ir::Value* arg) {
  out_ += names_.use(arg) + ": " + ir::to_string(arg->type());
}

void Printer::region(const ir::Block& block, bool entry_arguments) {
  out_ += "{\n";
  if (entry_arguments && !block.arguments().empty()) {
    out_.append(static_cast<size_t>(indent_), ' ');
    out_ += "^bb0(";
    for (size_t i = 0; i < block.arguments().size(); ++i) {
      if (i) out_ += ", ";
      block_argument(block.argument(i));
    }
    out_ += "):\n";
  }
  indent_ += 2;
  for (const auto& o : block.ops()) op(*o);
  indent_ -= 2;
  out_.append(static_cast<size_t>(indent_), ' ');
  out_ += "}";
}

void Printer::op(const ir::Op& op) {
  out_.append(static_cast<size_t>(indent_), ' ');
  if (op.num_results() > 0) out_ += names_.def(op) + " = ";
  print_op_body(*this, op);
  out_ += '\n';
}

namespace {

// `tensor<4xf32> {sdy.sharding = ...}`: a type with its argument or result attributes.
std::string with_attrs(const ir::Type& type, const std::vector<ir::AttrMap>& attrs, size_t i) {
  std::string out = ir::to_string(type);
  if (i < attrs.size()) out += attr_dict(attrs[i], [](const std::string&) { return true; });
  return out;
}

void print_function(std::string& out, const ir::Function& fn) {
  Names names(fn);
  out += fmt::format("  func.func {} {}(", fn.is_public ? "public" : "private", symbol(fn.name()));
  for (size_t i = 0; i < fn.num_parameters(); ++i) {
    const ir::Value* arg = fn.parameter(i);
    out += (i ? ", " : "") + names.use(arg) + ": " + with_attrs(arg->type(), fn.arg_attrs, i);
  }
  out += ")";
  std::vector<std::string> results;
  bool any_attrs = false;
  for (size_t i = 0; i < fn.result_types.size(); ++i) {
    results.push_back(with_attrs(fn.result_types[i], fn.result_attrs, i));
    any_attrs = any_attrs || results.back() != ir::to_string(fn.result_types[i]);
  }
  if (results.size() == 1 && !any_attrs)
    out += " -> " + results[0];
  else if (!results.empty())
    out += " -> (" + support::join(results, ", ") + ")";
  out += " {\n";
  Printer p(out, names, 4);
  for (const auto& op : fn.body().ops()) p.op(*op);
  out += "  }\n";
}

}  // namespace
}  // namespace print_impl

std::string print(const ir::Module& module) {
  using namespace print_impl;
  std::string out = "module";
  if (!module.name.empty()) out += " " + symbol(module.name);
  std::string attrs = attr_dict(module.attrs, [](const std::string&) { return true; });
  if (!attrs.empty()) out += " attributes" + attrs;
  out += " {\n";
  for (const ir::Mesh& mesh : module.meshes) out += "  " + print(mesh) + "\n";
  for (const auto& fn : module.functions) print_function(out, *fn);
  return out + "}\n";
}

}  // namespace tessera::stablehlo
