// split_backward (fragment_pipeline.h): zero-bubble's input- and weight-gradient parts of each
// transpose of the whole step. The input-gradient part (BI) is what the previous virtual stage
// waits for, so it runs first; the weight-gradient part (W) only feeds the parameter gradients and
// can fill a bubble later. Each transposed op is in exactly one part: nothing is recomputed.
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "mpmd/fragment_pipeline.h"
#include "support/error.h"

namespace tessera::mpmd {

namespace {

using Key = std::tuple<std::string, int64_t>;  // a transpose call: (name, call counter)

std::optional<Key> transpose_key(const ir::Op& op) {
  auto o = origin_of(op);
  if (!o || !o->transpose || o->call_counter < 0) return std::nullopt;
  return Key{o->name, o->call_counter};
}

}  // namespace

size_t split_backward(ir::Function& whole) {
  ir::Op* ret = whole.body().terminator();
  std::vector<ir::Op*> ops;
  for (const auto& op : whole.body().ops())
    if (op.get() != ret) ops.push_back(op.get());
  std::unordered_map<const ir::Op*, size_t> position;
  std::vector<std::optional<Key>> key(ops.size());
  for (size_t p = 0; p < ops.size(); ++p) {
    position[ops[p]] = p;
    key[p] = transpose_key(*ops[p]);
  }
  // Seeds of BI: transpose ops whose value another named computation reads. Then BI is closed over
  // the dependencies inside the same call, walking backwards in program order.
  std::vector<bool> input_part(ops.size(), false);
  for (size_t p = 0; p < ops.size(); ++p) {
    auto reader = origin_of(*ops[p]);
    if (!reader) continue;
    for (const ir::Value* v : outer_uses(*ops[p])) {
      auto it = v->defining_op() ? position.find(v->defining_op()) : position.end();
      if (it == position.end() || !key[it->second]) continue;
      if (std::get<0>(*key[it->second]) != reader->name) input_part[it->second] = true;
    }
  }
  for (size_t p = ops.size(); p-- > 0;) {
    if (!input_part[p]) continue;
    for (const ir::Value* v : outer_uses(*ops[p])) {
      auto it = v->defining_op() ? position.find(v->defining_op()) : position.end();
      if (it != position.end() && key[it->second] == key[p]) input_part[it->second] = true;
    }
  }
  // W: every other op of a call that has a BI part (a call without one, like the first virtual
  // stage's, whose tokens have no gradient, is all W: its BI action has nothing to run).
  std::map<Key, size_t> last_input;  // per call, the position of its BI's last op
  for (size_t p = 0; p < ops.size(); ++p)
    if (key[p] && input_part[p]) last_input[*key[p]] = p;
  size_t marked = 0;
  std::vector<bool> weight(ops.size(), false);
  for (size_t p = 0; p < ops.size(); ++p)
    if (key[p] && !input_part[p]) {
      ops[p]->attrs().set(kWeightAttr, true);
      weight[p] = true;
      marked++;
    }
  // Each call's W ops that come before its BI's last op move to right after it, in program order;
  // glue reading a moved value (e.g. the constraint autodiff puts on a gradient's layout) moves
  // with it, after the latest such call's BI. They only move later, so their operands are still
  // defined before them; no op they pass may read them. An op's place: (the position it goes
  // right after, whether it moved, its position).
  std::vector<std::tuple<size_t, bool, size_t>> place(ops.size());
  for (size_t p = 0; p < ops.size(); ++p) {
    size_t at = p;
    if (weight[p] && last_input.count(*key[p])) at = std::max(p, last_input.at(*key[p]));
    for (const ir::Value* v : outer_uses(*ops[p])) {
      auto it = v->defining_op() ? position.find(v->defining_op()) : position.end();
      if (it == position.end() || std::get<0>(place[it->second]) <= p) continue;  // not moved past p
      TESSERA_CHECK(!key[p] || weight[p],
                    "@{}: op {} reads a weight-gradient value of another call before that call's input gradient ends",
                    whole.name(), p);
      if (!key[p]) at = std::max(at, std::get<0>(place[it->second]));
    }
    place[p] = {at, at > p, p};
  }
  std::vector<size_t> order(ops.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return place[a] < place[b]; });
  std::vector<std::unique_ptr<ir::Op>> taken = whole.body().take_ops();
  std::unordered_map<const ir::Op*, std::unique_ptr<ir::Op>> owner;
  for (auto& op : taken) owner[op.get()] = std::move(op);
  for (size_t p : order) whole.body().append(std::move(owner.at(ops[p])));
  whole.body().append(std::move(owner.at(ret)));
  return marked;
}

}  // namespace tessera::mpmd
