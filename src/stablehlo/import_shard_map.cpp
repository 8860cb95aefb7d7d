// shard_map in GSPMD exports (import_gspmd.h). JAX wrote a shard_map, before Shardy, as a fence
// of custom calls around the per-device program:
//   %a = custom_call @Sharding(%x) {mhlo.sharding = "{devices=[2,1]<=[2]}"}   (already a constraint)
//   %p = custom_call @SPMDFullToShardShape(%a) {mhlo.sharding = "{manual}"}  (global -> local type)
//   ... the body: ops (usually one call @shmap_body) on local pieces ...
//   %r = custom_call @SPMDShardToFullShape(%q) {mhlo.sharding = "{devices=[2,1]<=[2]}"}
// Each connected group of such ops becomes one sdy.manual_computation over every mesh axis (the
// fence is fully manual): its inputs are the fenced values with their constraints' layouts, its
// body the ops between the fences, moved, its results the full values with ShardToFull's layouts.
// Constants the body reads from outside (and pure ops of constants) are copied in; any other value
// read across the fence is refused, as are manual values that leave the body without ShardToFull.
#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "stablehlo/lexer.h"
#include "ir/clone.h"
#include "ir/effects.h"
#include "stablehlo/import_gspmd.h"

namespace tessera::stablehlo {
namespace {

bool is_full_to_shard(const ir::Op& op) { return ir::is_call_to(op, kFullToShardTarget); }
bool is_shard_to_full(const ir::Op& op) { return ir::is_call_to(op, kShardToFullTarget); }

// Operands of `op` and values its regions read from outside them.
std::vector<const ir::Value*> reads_of(const ir::Op& op) {
  std::vector<const ir::Value*> out(op.operands().begin(), op.operands().end());
  for (const ir::Value* v : ir::captures_of(op)) out.push_back(v);
  return out;
}

class Outliner {
 public:
  Outliner(ir::Module& m, std::string file) : m_(m), file_(std::move(file)) {}

  void block(ir::Block& b) {
    for (const auto& op : b.ops())
      for (const auto& r : op->regions()) block(*r);
    if (std::none_of(b.ops().begin(), b.ops().end(), [](const auto& op) { return is_full_to_shard(*op); })) {
      for (const auto& op : b.ops())
        if (is_shard_to_full(*op)) fail(*op, "has no SPMDFullToShardShape before it in its block");
      return;
    }
    if (m_.meshes.empty()) return identities(b);
    group(b);
    rebuild(b);
  }

 private:
  [[noreturn]] void fail(const ir::Op& op, const std::string& why) const {
    std::string what = op.kind() == ir::OpKind::CustomCall
                           ? fmt::format("custom_call @{}", op.attrs().get_or<std::string>("call_target_name", "?"))
                           : std::string(op.name());
    throw ParseError(file_, op.loc.line, op.loc.column, fmt::format("{} (shard_map): {}", what, why));
  }

  // No mesh: every sharding of the module was replicated (one device), so the fences change no
  // type and are the identity.
  void identities(ir::Block& b) {
    for (const auto& op : b.ops()) {
      if (!is_full_to_shard(*op) && !is_shard_to_full(*op)) continue;
      if (op->operand(0)->type() != op->result(0)->type())
        fail(*op, fmt::format("changes {} to {} on one device", to_string(op->operand(0)->type()),
                              to_string(op->result(0)->type())));
      replaced_[op->result(0)] = op->operand(0);
    }
    ir::replace_uses(b, replaced_);  // before the fences go: a fence back may read a fence's result
    replaced_.clear();
    b.erase_if([](const ir::Op& op) { return is_full_to_shard(op) || is_shard_to_full(op); });
  }

  int find(int g) { return parent_[g] == g ? g : parent_[g] = find(parent_[g]); }
  int fresh() {
    parent_.push_back(static_cast<int>(parent_.size()));
    return parent_.back();
  }

  // Which group each fenced op belongs to: values derived from a FullToShard result are manual,
  // and ops reading manual values join their groups.
  void group(ir::Block& b) {
    std::unordered_map<const ir::Value*, int> manual;
    for (const auto& op : b.ops()) {
      if (is_full_to_shard(*op)) {
        if (op->operands().size() != 1 || op->num_results() != 1)
          fail(*op, fmt::format("takes 1 operand and 1 result, has {} and {}", op->operands().size(),
                                op->num_results()));
        manual[op->result(0)] = group_of_[op.get()] = fresh();
        continue;
      }
      int g = -1;
      for (const ir::Value* v : reads_of(*op))
        if (auto it = manual.find(v); it != manual.end()) g = g < 0 ? find(it->second) : (parent_[find(it->second)] = find(g));
      if (g < 0) {
        if (is_shard_to_full(*op)) fail(*op, "reads no value of a shard_map body");
        continue;
      }
      if (op->kind() == ir::OpKind::Return)
        fail(*op, "a shard_map body's value (per device) is returned without SPMDShardToFullShape");
      group_of_[op.get()] = g;
      if (is_shard_to_full(*op)) {
        if (op->operands().size() != 1 || op->num_results() != 1)
          fail(*op, fmt::format("takes 1 operand and 1 result, has {} and {}", op->operands().size(),
                                op->num_results()));
        continue;  // its result is the full value again
      }
      for (size_t r = 0; r < op->num_results(); ++r) manual[op->result(r)] = g;
    }
    for (auto& [op, g] : group_of_) g = find(g);
  }

  struct Piece {
    std::vector<ir::Op*> full_to_shard, shard_to_full;
    std::unique_ptr<ir::Block> body = std::make_unique<ir::Block>();
    ir::ValueMap inside;  // FullToShard results, constants copied
  };

  ir::Sharding layout_of(const ir::Op& fence, const ir::Value* v, bool input) const {
    const ir::Sharding* s = nullptr;
    if (input) {
      if (const ir::Op* def = v->defining_op(); def && def->kind() == ir::OpKind::ShardingConstraint)
        s = def->attrs().find<ir::Sharding>("sharding");
    } else {
      s = fence.attrs().find<ir::Sharding>("sdy.sharding");
    }
    if (s == nullptr)
      fail(fence, input ? "its operand has no layout: a custom_call @Sharding with a tiled mhlo.sharding "
                          "must come right before it"
                        : "has no tiled or replicated mhlo.sharding");
    return *s;
  }

  // The type of one device's piece of `global` under `s`, every mesh axis manual.
  ir::Type piece(const ir::Op& fence, const ir::Type& global, const ir::Sharding& s) const {
    const ir::Mesh& mesh = m_.mesh(s.mesh);
    std::vector<int64_t> shape = global.shape;
    for (size_t d = 0; d < shape.size() && d < s.dims.size(); ++d) {
      int64_t n = ir::dim_shards(s, static_cast<int64_t>(d), mesh);
      if (shape[d] % n != 0)
        fail(fence, fmt::format("dimension {} of {} (size {}) does not split evenly into {} pieces", d,
                                to_string(global), shape[d], n));
      shape[d] /= n;
    }
    return global.with_shape(shape);
  }

  void rebuild(ir::Block& b) {
    std::map<int, Piece> pieces;
    std::vector<std::unique_ptr<ir::Op>> ops = b.take_ops(), keep, fences;
    std::unordered_map<const ir::Op*, size_t> position;
    for (size_t i = 0; i < ops.size(); ++i) position[ops[i].get()] = i;
    // Outside values the bodies may copy: pure ops, without regions, of such values only (constants,
    // iotas, their broadcasts), which every device computes alike.
    std::unordered_set<const ir::Op*> copyable;
    for (auto& up : ops) {
      ir::Op* op = up.get();
      auto it = group_of_.find(op);
      if (it == group_of_.end()) {
        if (ir::has_trait(op->kind(), ir::kPure) && op->regions().empty() &&
            std::all_of(op->operands().begin(), op->operands().end(),
                        [&](const ir::Value* v) { return copyable.count(v->defining_op()) > 0; }))
          copyable.insert(op);
        keep.push_back(std::move(up));
        continue;
      }
      Piece& p = pieces[it->second];
      if (is_full_to_shard(*op)) {
        p.inside[op->result(0)] = p.body->add_argument(op->result(0)->type());
        p.full_to_shard.push_back(op);
        fences.push_back(std::move(up));
      } else if (is_shard_to_full(*op)) {
        p.shard_to_full.push_back(op);
        fences.push_back(std::move(up));
      } else {
        for (const ir::Value* v : reads_of(*op)) copy_in(p, *op, v, copyable);
        ir::replace_uses(*op, p.inside);
        p.body->append(std::move(up));
      }
    }
    for (auto& [g, p] : pieces) {
      if (p.shard_to_full.empty()) fail(*p.full_to_shard.front(), "its shard_map body ends in no SPMDShardToFullShape");
      size_t at = position.at(p.shard_to_full.front());
      for (const ir::Op* f : p.full_to_shard)
        if (position.at(f) > at)
          fail(*f, "comes after the SPMDShardToFullShape of its own shard_map body; the pieces interleave");
    }
    // The ops outside, in order, with each manual computation where its first ShardToFull stood.
    std::vector<std::pair<size_t, std::unique_ptr<ir::Op>>> placed;
    for (auto& up : keep) placed.emplace_back(position.at(up.get()), std::move(up));
    for (auto& [g, p] : pieces) placed.emplace_back(position.at(p.shard_to_full.front()), computation(p));
    std::stable_sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [pos, up] : placed) b.append(std::move(up));
    // While the fences still stand: replacing an operand reads the old value's type. Their results
    // are read only in this block and the regions below it.
    ir::replace_uses(b, replaced_);
    replaced_.clear();
  }

  // Makes `v`, which body op `reader` reads, available inside p's body: a body value already is,
  // an outside constant (or a pure op of constants) is copied in, anything else is refused.
  void copy_in(Piece& p, const ir::Op& reader, const ir::Value* v, const std::unordered_set<const ir::Op*>& copyable) {
    const ir::Op* d = v->defining_op();
    if (p.inside.count(v) || (d != nullptr && group_of_.count(d) && !is_shard_to_full(*d))) return;
    if (d == nullptr || !copyable.count(d))
      fail(reader, "reads a value defined outside its shard_map body (only constants and pure ops of constants may be)");
    for (const ir::Value* operand : d->operands()) copy_in(p, reader, operand, copyable);
    ir::ValueMap map = p.inside;
    ir::Op* copy = ir::clone_op(*p.body, *d, map);
    for (size_t r = 0; r < d->num_results(); ++r) p.inside[d->result(r)] = copy->result(r);
  }

  std::unique_ptr<ir::Op> computation(Piece& p) {
    ir::ShardingList in, out;
    std::vector<ir::Value*> inputs;
    std::vector<ir::Type> results;
    std::vector<ir::Value*> returned;
    for (ir::Op* f : p.full_to_shard) {
      ir::Sharding s = layout_of(*f, f->operand(0), true);
      ir::Type local = piece(*f, f->operand(0)->type(), s);
      if (local != f->result(0)->type())
        fail(*f, fmt::format("gives {}, but {} split as its operand's layout is {}", to_string(f->result(0)->type()),
                             to_string(f->operand(0)->type()), to_string(local)));
      inputs.push_back(f->operand(0));
      in.push_back(std::move(s));
    }
    for (ir::Op* t : p.shard_to_full) {
      ir::Sharding s = layout_of(*t, t->result(0), false);
      ir::Type local = piece(*t, t->result(0)->type(), s);
      if (local != t->operand(0)->type())
        fail(*t, fmt::format("takes {}, but {} split as its layout is {}", to_string(t->operand(0)->type()),
                             to_string(t->result(0)->type()), to_string(local)));
      ir::Value* v = t->operand(0);
      if (auto it = p.inside.find(v); it != p.inside.end()) v = it->second;  // the body returns an input
      returned.push_back(v);
      results.push_back(t->result(0)->type());
      out.push_back(std::move(s));
    }
    auto ret = std::make_unique<ir::Op>(ir::OpKind::Return, returned, std::vector<ir::Type>{});
    ret->loc = p.shard_to_full.back()->loc;
    p.body->append(std::move(ret));
    ir::AxisNames axes;
    for (const ir::MeshAxis& a : m_.mesh(in.empty() ? out.front().mesh : in.front().mesh).axes) axes.push_back(a.name);
    ir::AttrMap attrs;
    attrs.set("in_shardings", std::move(in));
    attrs.set("out_shardings", std::move(out));
    attrs.set("manual_axes", std::move(axes));
    auto op = std::make_unique<ir::Op>(ir::OpKind::ManualComputation, inputs, results, std::move(attrs));
    op->loc = p.full_to_shard.front()->loc;
    op->adopt_region(std::move(p.body));
    for (size_t i = 0; i < p.shard_to_full.size(); ++i) replaced_[p.shard_to_full[i]->result(0)] = op->result(i);
    return op;
  }

  ir::Module& m_;
  std::string file_;
  std::vector<int> parent_;
  std::unordered_map<const ir::Op*, int> group_of_;
  ir::ValueMap replaced_;  // the block's fence results, until the block is rebuilt
};

}  // namespace

void outline_shard_maps(ir::Module& module, const std::string& file) {
  Outliner o(module, file);
  for (auto& fn : module.functions) o.block(fn->body());
}

}  // namespace tessera::stablehlo
