// The all-reduce combining pass (see combine.h).
#include "spmd/combine.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/builder.h"
#include "ir/clone.h"
#include "support/error.h"

namespace tessera::spmd {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

// What must agree for two all_reduces to merge.
struct Key {
  ir::AttrMap attrs;  // groups, global ids (the channel handle is left out)
  ir::ElementType element;
  OpKind combiner;
  bool operator<(const Key& o) const {
    if (element != o.element) return element < o.element;
    if (combiner != o.combiner) return combiner < o.combiner;
    // AttrMap has ==, not <: compare the groups' printed values through their matrices.
    const auto* a = attrs.find<ir::IntMatrix>("replica_groups");
    const auto* b = o.attrs.find<ir::IntMatrix>("replica_groups");
    if ((a == nullptr) != (b == nullptr)) return a == nullptr;
    if (a && a->values != b->values) return a->values < b->values;
    if (a && a->cols != b->cols) return a->cols < b->cols;
    return attrs.has("use_global_device_ids") < o.attrs.has("use_global_device_ids");
  }
};

std::optional<Key> key_of(const Op& op) {
  if (op.kind() != OpKind::AllReduce || op.operands().size() != 1) return std::nullopt;
  auto combiner = ir::region_combiner(op);
  ir::ElementType e = op.operand(0)->type().element;
  if (!combiner || !ir::is_float(e)) return std::nullopt;
  Key k{{}, e, *combiner};
  if (const auto* g = op.attrs().find<ir::IntMatrix>("replica_groups")) k.attrs.set("replica_groups", *g);
  if (op.attrs().has("use_global_device_ids")) k.attrs.set("use_global_device_ids", true);
  if (!op.attrs().has("channel_handle")) return std::nullopt;  // cross-replica all_reduces stay as they are
  return k;
}

// Whether `op` reads (directly or inside its regions) any value in `set`.
bool reads_any(const Op& op, const std::unordered_set<const Value*>& set) {
  for (const Value* v : op.operands())
    if (set.count(v)) return true;
  for (const auto& r : op.regions())
    for (const auto& inner : r->ops())
      if (reads_any(*inner, set)) return true;
  return false;
}

// The values `op` reads: its operands and what its regions read from outside them.
std::vector<const Value*> reads_of(const Op& op) {
  std::vector<const Value*> out(op.operands().begin(), op.operands().end());
  for (const Value* v : ir::captures_of(op)) out.push_back(v);
  return out;
}

// The merged program still defines every value before it is read (the grouping's promise).
void check_def_before_use(const ir::Block& block) {
  std::unordered_map<const Value*, size_t> producer;
  for (size_t i = 0; i < block.ops().size(); ++i)
    for (const Value* r : block.ops()[i]->results()) producer[r] = i;
  for (size_t i = 0; i < block.ops().size(); ++i)
    for (const Value* v : reads_of(*block.ops()[i])) {
      auto it = producer.find(v);
      TESSERA_CHECK(it == producer.end() || it->second < i, "combine_all_reduces: op {} ({}) reads a value op {} defines",
                    i, block.ops()[i]->name(), it->second);
    }
}

}  // namespace

int combine_all_reduces(ir::Module& module, ir::Function& fn, Report& report) {
  ir::Block& block = fn.body();
  // Groups, greedily in program order: an all_reduce joins the open group of its key unless its
  // operand depends on a member's result (then the group closes and a new one starts). Merged, a
  // group runs where its last member stands and gives every member's result there, so each of its
  // results waits for all that its members read: a group's `tainted` values (made from its
  // results) are also tainted for every open group it reads from, its `upstream` (seed 1259 of the
  // property test: A1, B1, B2 reading A1, then A2 reading B1 joined A, and the merged A and B
  // each waited for the other).
  struct Open {
    std::vector<Op*> members;
    std::unordered_set<const Value*> tainted;  // values computed from the members' results
    std::set<const void*> upstream;            // the open groups its members read from
  };
  std::vector<std::vector<Op*>> groups;
  std::map<Key, Open> open;
  auto close = [&](Open& g) {
    if (g.members.size() > 1) groups.push_back(g.members);
    for (auto& [key, h] : open) h.upstream.erase(&g);
    g = Open{};
  };
  // The open groups g waits for, directly or through others (g itself first).
  auto waited_for = [&](Open& g) {
    std::vector<Open*> out{&g};
    for (size_t i = 0; i < out.size(); ++i)
      for (auto& [key, u] : open)
        if (out[i]->upstream.count(&u) && std::find(out.begin(), out.end(), &u) == out.end()) out.push_back(&u);
    return out;
  };
  for (const auto& owned : block.ops()) {
    Op* op = owned.get();
    auto k = key_of(*op);
    std::vector<Open*> read;  // the open groups whose results (or values made from them) op reads
    for (auto& [key, g] : open)
      if (reads_any(*op, g.tainted)) read.push_back(&g);
    if (!k) {
      for (Open* g : read)
        for (Value* r : op->results()) g->tainted.insert(r);
      continue;
    }
    Open& g = open[*k];
    if (std::find(read.begin(), read.end(), &g) != read.end()) {
      close(g);
      std::erase(read, &g);
    }
    for (Open* u : read) g.upstream.insert(u);
    g.members.push_back(op);
    g.tainted.insert(op->result(0));
    for (Open* u : waited_for(g)) u->tainted.insert(g.tainted.begin(), g.tainted.end());
  }
  for (auto& [k, g] : open) close(g);

  int removed = 0;
  for (const auto& g : groups) {
    // The member that runs last: an earlier group's merge moves the ops that read its results
    // after it, and those may be members of this group (seed 1449 of the property test: the
    // merged all_reduce went before that member, ahead of its operand).
    Op* last = nullptr;
    for (const auto& op : block.ops())
      if (std::find(g.begin(), g.end(), op.get()) != g.end()) last = op.get();
    // Ops between the members that read a member's result move after the last member.
    {
      std::vector<std::unique_ptr<Op>> ops = block.take_ops();
      std::unordered_set<const Value*> tainted;
      std::vector<std::unique_ptr<Op>> early, delayed, late;
      bool started = false, passed = false;
      for (auto& op : ops) {
        bool member = std::find(g.begin(), g.end(), op.get()) != g.end();
        if (passed) {
          late.push_back(std::move(op));
          continue;
        }
        started |= member;
        if (member) {
          tainted.insert(op->result(0));
          passed = op.get() == last;
          early.push_back(std::move(op));
        } else if (started && reads_any(*op, tainted)) {
          for (Value* r : op->results()) tainted.insert(r);
          delayed.push_back(std::move(op));
        } else {
          early.push_back(std::move(op));
        }
      }
      for (auto* part : {&early, &delayed, &late})
        for (auto& op : *part) block.append(std::move(op));
    }
    ir::Block scratch;
    ir::Builder b(module, scratch);
    std::vector<ir::Tensor> flat;
    std::vector<int64_t> sizes;
    for (const Op* m : g) {
      ir::Tensor x = b.wrap(m->operand(0));
      sizes.push_back(x.type().num_elements());
      flat.push_back(ir::reshape(x, {sizes.back()}));
    }
    ir::Tensor cat = ir::concatenate(flat, 0);
    ir::AttrMap attrs = last->attrs();
    attrs.set("channel_handle", ir::ChannelHandle{b.next_channel_id(), 1});
    ir::Tensor sum = b.emit_with_regions(OpKind::AllReduce, {cat}, attrs, {cat.type()}, [&](Op& copy) {
      ir::ValueMap map;
      ir::Block& body = copy.add_region();
      for (const auto& a : last->region(0).arguments()) map[a.get()] = body.add_argument(a->type());
      for (const auto& inner : last->region(0).ops()) ir::clone_op(body, *inner, map);
    })[0];
    std::vector<Value*> pieces;
    int64_t offset = 0;
    for (size_t j = 0; j < g.size(); ++j) {
      ir::Tensor piece = ir::slice(sum, {offset}, {offset + sizes[j]});
      pieces.push_back(ir::reshape(piece, g[j]->result(0)->type().shape).value());
      offset += sizes[j];
    }
    for (auto& op : scratch.take_ops()) block.insert_before(last, std::move(op));
    for (size_t j = 0; j < g.size(); ++j) ir::replace_uses(block, ir::ValueMap{{g[j]->result(0), pieces[j]}});
    // The report: one record for the merged all_reduce.
    CollectiveRecord merged{"all_reduce", "combined:", 1, 0, sum.value()->defining_op(), "", ""};
    std::erase_if(report.collectives, [&](const CollectiveRecord& r) {
      if (std::find(g.begin(), g.end(), r.op) == g.end()) return false;
      merged.origin += " " + r.origin + (r.forced_by.empty() ? "" : ", " + r.forced_by) + ";";
      merged.group_size = r.group_size;
      merged.bytes_per_device += r.bytes_per_device;
      return true;
    });
    report.collectives.push_back(merged);
    block.erase_if([&](const Op& op) { return std::find(g.begin(), g.end(), &op) != g.end(); });
    removed += static_cast<int>(g.size()) - 1;
  }
  check_def_before_use(block);
  return removed;
}

}  // namespace tessera::spmd
