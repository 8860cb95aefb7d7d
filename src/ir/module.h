// The program: Module > Function > Block > Op, with Values flowing between ops.
//
// Ownership is a tree: a Module owns its functions, a Function its body Block, a Block its
// arguments and ops, an Op its results and region Blocks. Operands are plain pointers to Values
// defined earlier (SSA). A region is a single Block, as in every StableHLO op that has one.
// Meshes live on the Module; shardings are attributes ("sdy.sharding") of function arguments and
// results and of ops, the way Shardy writes them.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/op_kind.h"
#include "ir/sharding.h"
#include "ir/type.h"
#include "support/error.h"

namespace tessera::ir {

class Op;
class Block;

class Value {
 public:
  Value(Type type, Op* def, Block* block, int index)
      : type_(std::move(type)), def_(def), block_(block), index_(index) {}
  const Type& type() const { return type_; }
  Op* defining_op() const { return def_; }        // null for a block argument
  Block* owner_block() const { return block_; }   // set for a block argument
  int index() const { return index_; }            // result number, or argument number

 private:
  Type type_;
  Op* def_;
  Block* block_;
  int index_;
};

class Block {
 public:
  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  Value* add_argument(Type type);
  Op* append(std::unique_ptr<Op> op);
  // Inserts `op` just before `before`, an op of this block, and returns it (for transforms that
  // put a new op where an old one stands).
  Op* insert_before(const Op* before, std::unique_ptr<Op> op);
  // Removes the ops for which `pred` holds, keeping the others in order. The caller makes sure no
  // op that stays (nor one in its regions, nor the function's return) uses a removed op's results.
  void erase_if(const std::function<bool(const Op&)>& pred);
  // Removes and returns every op (for transforms that build ops with a Builder in a scratch block
  // and move them into place with insert_before).
  std::vector<std::unique_ptr<Op>> take_ops();

  const std::vector<std::unique_ptr<Value>>& arguments() const { return args_; }
  Value* argument(size_t i) const { return args_.at(i).get(); }
  const std::vector<std::unique_ptr<Op>>& ops() const { return ops_; }
  // The block's final op; a Return for a finished block.
  Op* terminator() const;

  Op* parent_op = nullptr;  // the op this block is a region of; null for a function body

 private:
  std::vector<std::unique_ptr<Value>> args_;
  std::vector<std::unique_ptr<Op>> ops_;
};

// Where an op came from in parsed text (line 0: built in C++), for messages about it.
struct SourceLoc {
  int line = 0, column = 0;
};

class Op {
 public:
  Op(OpKind kind, std::vector<Value*> operands, const std::vector<Type>& result_types,
     AttrMap attrs = {});
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  OpKind kind() const { return kind_; }
  std::string_view name() const { return spelling(kind_); }
  const std::vector<Value*>& operands() const { return operands_; }
  Value* operand(size_t i) const { return operands_.at(i); }
  // Makes operand i `v`, for transforms that replace a value by an equal one (same type).
  void set_operand(size_t i, Value* v);
  size_t num_results() const { return results_.size(); }
  Value* result(size_t i = 0) const { return results_.at(i).get(); }
  std::vector<Value*> results() const;
  std::vector<Type> operand_types() const;
  std::vector<Type> result_types() const;

  AttrMap& attrs() { return attrs_; }
  const AttrMap& attrs() const { return attrs_; }

  Block& add_region();
  Block& adopt_region(std::unique_ptr<Block> block);
  const std::vector<std::unique_ptr<Block>>& regions() const { return regions_; }
  Block& region(size_t i) const { return *regions_.at(i); }

  Block* parent = nullptr;
  SourceLoc loc;

 private:
  OpKind kind_;
  std::vector<Value*> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  AttrMap attrs_;
  std::vector<std::unique_ptr<Block>> regions_;
};

class Function {
 public:
  explicit Function(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  // For the parser, which names a function it makes of a named computation once the module's own
  // names are known. Callers update the calls.
  void rename(std::string name) { name_ = std::move(name); }
  bool is_public = true;
  SourceLoc loc;  // of `func.func` in parsed text
  Block& body() { return body_; }
  const Block& body() const { return body_; }

  Value* add_parameter(Type type, std::optional<Sharding> sharding = std::nullopt);
  size_t num_parameters() const { return body_.arguments().size(); }
  Value* parameter(size_t i) const { return body_.argument(i); }

  // Result types are fixed when the function is finished (set_results) or parsed.
  std::vector<Type> result_types;
  // Per-argument and per-result attributes, e.g. "sdy.sharding" (a Sharding), "jax.result_info".
  std::vector<AttrMap> arg_attrs;
  std::vector<AttrMap> result_attrs;

  std::optional<Sharding> arg_sharding(size_t i) const;
  std::optional<Sharding> result_sharding(size_t i) const;
  void set_result_sharding(size_t i, Sharding s);

  // Appends the return op and records the result types.
  void set_results(const std::vector<Value*>& values);

 private:
  std::string name_;
  Block body_;
};

class Module {
 public:
  explicit Module(std::string name = "") : name(std::move(name)) {}

  std::string name;  // printed as module @name; empty: no name
  AttrMap attrs;     // e.g. mhlo.num_partitions
  std::vector<Mesh> meshes;
  std::vector<std::unique_ptr<Function>> functions;
  int64_t channel_ids = 0;  // the last channel id the builder handed out

  const Mesh& add_mesh(Mesh mesh);  // validated
  const Mesh* find_mesh(std::string_view name) const;
  const Mesh& mesh(std::string_view name) const;  // UserError when missing
  Function& add_function(std::string name);
  void remove_function(const Function& fn);
  Function* find_function(std::string_view name) const;
};

// The binary op a region applies to its two arguments when that is all it does
// (return(op(arg0, arg1)), either order): the combiner of reduce, scatter and the reducing
// collectives. Nothing for any other body.
std::optional<OpKind> region_combiner(const Op& op, size_t region = 0);

// The values that `op`'s regions read and that are defined outside them (in enclosing blocks), in
// the order they are first read.
std::vector<const Value*> captures_of(const Op& op);

// Checks the whole module: every op's result types match its shape rule, operands are defined
// before use, blocks end in returns whose types match, regions have the types their ops run them
// with, and every sharding validates against its mesh. Throws VerifyError naming the function and
// op, with the op's place in its text when it was parsed.
struct VerifyError : support::UserError {
  VerifyError(const std::string& message, SourceLoc at) : support::UserError(message), loc(at) {}
  SourceLoc loc;  // line 0: an op built in C++
};
void verify(const Module& module);

}  // namespace tessera::ir
