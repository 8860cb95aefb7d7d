// Choosing the riders of element-wise loops (fusion_riders.h).
#include "exec/fusion_riders.h"

#include <algorithm>

#include "exec/fusion_rules.h"

namespace tessera::exec {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

// The roots whose loops compute `op`: itself when it is stored, else the roots of its readers.
void roots_of(const Op* op, const std::unordered_map<const Value*, std::vector<const Op*>>& readers,
              const std::unordered_set<const Op*>& inlined, std::unordered_set<const Op*>& out) {
  if (!inlined.count(op)) {
    out.insert(op);
    return;
  }
  auto it = readers.find(op->result(0));
  if (it == readers.end()) return;
  for (const Op* r : it->second) roots_of(r, readers, inlined, out);
}

}  // namespace

void choose_riders(const ir::Block& block, const std::unordered_map<const Value*, std::vector<const Op*>>& readers,
                   const std::unordered_set<const Value*>& region_reads, const std::function<bool(const Op&)>& loop_root,
                   std::unordered_set<const Op*>& inlined, Riders& riders) {
  std::unordered_map<const Op*, size_t> index;
  for (size_t i = 0; i < block.ops().size(); ++i) index.emplace(block.ops()[i].get(), i);
  for (const auto& owned : block.ops()) {
    const Op* m = owned.get();
    if (!loop_root(*m) || riders.of_root.count(m) || region_reads.count(m->result(0))) continue;
    auto it = readers.find(m->result(0));
    if (it == readers.end()) continue;
    // The roots of the loops that read it in place, and the position of its first other reader.
    std::unordered_set<const Op*> roots;
    size_t first_other = block.ops().size();
    bool ok = true;
    for (const Op* r : it->second) {
      if (r->kind() != OpKind::Return && fusion_rules::fusable(*r) && fusion_rules::reads_in_place(*r, m->result(0)) &&
          (inlined.count(r) || loop_root(*r)))
        roots_of(r, readers, inlined, roots);
      else if (r->kind() == OpKind::Reduce || fusion_rules::is_view(r->kind()))
        ok = false;  // a loop that reads it otherwise (a fold, strided loads): left as it is
      else
        first_other = std::min(first_other, index.at(r));
    }
    if (!ok || roots.size() != 1) continue;
    const Op* root = *roots.begin();
    if (root == m || !loop_root(*root) || riders.root_of.count(root) || first_other <= index.at(root) ||
        root->result(0)->type().shape != m->result(0)->type().shape ||
        (riders.of_root.count(root) && riders.of_root.at(root).size() >= kMaxRiders))
      continue;
    riders.of_root[root].push_back(m);
    riders.root_of.emplace(m, root);
    inlined.insert(m);
  }
}

bool strided_read(const Op& root, const Value* v, const std::unordered_set<const Op*>& inlined) {
  const auto& loop = root.result(0)->type().shape;
  std::vector<const Op*> todo = {&root};
  std::unordered_set<const Op*> seen;
  while (!todo.empty()) {
    const Op* op = todo.back();
    todo.pop_back();
    if (!seen.insert(op).second) continue;
    for (const Value* w : op->operands()) {
      bool view = fusion_rules::is_view(op->kind());
      if (w == v && (view || w->type().shape != loop)) return true;
      const Op* def = w->defining_op();
      if (def && inlined.count(def) && !view) todo.push_back(def);
    }
  }
  return false;
}

}  // namespace tessera::exec
