// The buffer plan of a compiled function (executable.h, buffer_plan.h): the live range of every
// value its block computes, in steps of that block, from the frees the compiler recorded (a
// reshape shares its operand's storage); offsets for them in one arena; the parameter whose
// buffer takes each result.
#include <algorithm>

#include "exec/executable_code.h"
#include "exec/fusion.h"
#include "exec/strided.h"
#include "support/error.h"
#include "support/memory.h"

namespace tessera::exec::detail {

namespace {

int64_t bytes_of(const ir::Type& t) {
  if (!t.is_tensor()) return 0;  // tokens hold nothing; tuples own their members (never in the arena)
  std::optional<int64_t> n = support::checked_bytes(t.shape, ir::info(t.element).bytes);
  if (!n) support::fail("{} is too large: its size in bytes does not fit in 64 bits", to_string(t));
  return *n;
}

// Kernels that read element i of each operand before writing element i of the result and read
// nothing else: their result may go over an operand of its type that dies at the op (the fast
// kernel's loop; the reference kernel computes into a fresh buffer, copied after).
bool element_by_element(ir::OpKind k) {
  switch (k) {
    case ir::OpKind::Add: case ir::OpKind::Subtract: case ir::OpKind::Multiply: case ir::OpKind::Divide:
    case ir::OpKind::Maximum: case ir::OpKind::Minimum:
      return true;
    default: return false;
  }
}

// The element offset of a slice that selects one contiguous run of its operand in row-major order
// (steps of 1; whole trailing dimensions after the first one cut; single indices before it), else
// -1: its result can be a view of the operand's storage from that offset.
int64_t contiguous_slice_offset(const ir::Op& op) {
  if (op.kind() != ir::OpKind::Slice || op.operands().size() != 1) return -1;
  const auto& shape = op.operand(0)->type().shape;
  const auto& out = op.result(0)->type().shape;
  const auto* steps = op.attrs().find<std::vector<int64_t>>("strides");
  if (steps != nullptr && std::any_of(steps->begin(), steps->end(), [](int64_t s) { return s != 1; })) return -1;
  size_t d = 0;  // the first dimension cut: before it single indices, after it whole dimensions
  while (d < shape.size() && out[d] == 1 && shape[d] != 1) ++d;
  for (size_t e = d + 1; e < shape.size(); ++e)
    if (out[e] != shape[e]) return -1;
  Dims strides(shape.size());
  return view_strides(op, strides);
}

}  // namespace

void plan_arena(Code& code) {
  const BlockCode& body = code.body;
  const auto n = static_cast<uint32_t>(body.steps.size());
  code.slot_offset.assign(code.slot_types.size(), -1);

  // Values: the results of the block's steps, live from their step to the last step that frees
  // one of their slots (the return: step n). A reshape of a value of the block is a view: its
  // result is another slot of its operand's value (same offset), which lives as long as both. So
  // is a slice of one contiguous run of it (the pieces of a combined all_reduce), `delta` bytes in.
  std::vector<int64_t> value_of(code.slot_types.size(), -1), delta(code.slot_types.size(), 0);
  std::vector<LiveRange> ranges;
  std::vector<std::vector<Slot>> slots_of_value;
  std::vector<uint8_t> inner_views;  // per value: slots lie inside it (a slice's, a concatenated operand's)
  for (uint32_t k = 0; k < n; ++k) {
    const Step& s = body.steps[k];
    const Slot* out = code.list(s.results);
    const Slot* in = code.list(s.operands);
    int64_t slice_at = s.kind == StepKind::kKernel ? contiguous_slice_offset(*s.op) : -1;
    if (s.kind == StepKind::kKernel && (s.op->kind() == ir::OpKind::Reshape || slice_at >= 0) && s.operands.size == 1 &&
        value_of[in[0]] >= 0) {
      auto v = static_cast<size_t>(value_of[in[0]]);
      value_of[out[0]] = value_of[in[0]];
      delta[out[0]] = delta[in[0]] + std::max<int64_t>(slice_at, 0) * ir::info(code.slot_types[out[0]]->element).bytes;
      slots_of_value[v].push_back(out[0]);
      inner_views[v] |= slice_at >= 0;
      ++code.stats.views;
      continue;
    }
    for (uint32_t r = 0; r < s.results.size; ++r) {
      if (!code.slot_types[out[r]]->is_tensor()) continue;  // a token or tuple: kept in its slot, not the arena
      value_of[out[r]] = static_cast<int64_t>(ranges.size());
      ranges.push_back({bytes_of(*code.slot_types[out[r]]), k, k, -1});
      slots_of_value.push_back({out[r]});
      inner_views.push_back(0);
    }
    code.max_operands = std::max<size_t>(code.max_operands, s.operands.size);
    code.max_results = std::max<size_t>(code.max_results, s.results.size);
  }
  std::vector<uint8_t> freed(ranges.size(), 0);
  auto free_at = [&](Range frees, uint32_t k) {
    const Slot* f = code.list(frees);
    for (uint32_t i = 0; i < frees.size; ++i)
      if (int64_t v = value_of[f[i]]; v >= 0) {
        ranges[static_cast<size_t>(v)].last = std::max(ranges[static_cast<size_t>(v)].last, k);
        freed[static_cast<size_t>(v)] = 1;
      }
  };
  for (uint32_t k = 0; k < n; ++k) free_at(body.steps[k].frees, k);
  free_at(body.return_frees, n);
  for (size_t v = 0; v < ranges.size(); ++v)
    if (!freed[v]) ranges[v].last = n;  // never freed: held to the end
  // A concatenation along its outermost dimension of more than one element lays each operand out
  // as one run of its result: an operand value of the block, named once there with no views
  // inside it, is computed in place (the gradients of a combined all_reduce): its slots move into the
  // result's value, as many bytes in as the operands before it, and that value lives from the
  // first of them to the last read of any.
  for (uint32_t k = 0; k < n; ++k) {
    const Step& s = body.steps[k];
    if (s.kind != StepKind::kKernel || s.op->kind() != ir::OpKind::Concatenate || s.results.size != 1) continue;
    Slot result = code.list(s.results)[0];
    int64_t c = value_of[result];
    if (c < 0 || delta[result] != 0) continue;
    const auto& shape = code.slot_types[result]->shape;
    auto dim = static_cast<size_t>(s.op->attrs().get<int64_t>("dimension"));
    if (std::any_of(shape.begin(), shape.begin() + static_cast<long>(dim), [](int64_t d) { return d != 1; })) continue;
    const Slot* in = code.list(s.operands);
    int64_t at = 0;
    for (uint32_t i = 0; i < s.operands.size; ++i) {
      int64_t u = value_of[in[i]], bytes = bytes_of(*code.slot_types[in[i]]);
      bool once = std::count_if(in, in + s.operands.size, [&](Slot o) { return value_of[o] == u; }) == 1;
      if (u >= 0 && u != c && once && !inner_views[static_cast<size_t>(u)] && delta[in[i]] == 0 &&
          ranges[static_cast<size_t>(u)].bytes == bytes) {
        auto& from = slots_of_value[static_cast<size_t>(u)];
        for (Slot slot : from) {
          value_of[slot] = c;
          delta[slot] += at;
          slots_of_value[static_cast<size_t>(c)].push_back(slot);
        }
        from.clear();
        LiveRange& rc = ranges[static_cast<size_t>(c)];
        LiveRange& ru = ranges[static_cast<size_t>(u)];
        rc.first = std::min(rc.first, ru.first);
        rc.last = std::max(rc.last, ru.last);
        ru = LiveRange{0, ru.first, ru.first, -1};
        inner_views[static_cast<size_t>(c)] = 1;
        ++code.stats.views;
      }
      at += bytes;
    }
  }
  // A row group runs the steps it spans interleaved, tile by tile (and some before or after the
  // others): every value defined in it lives from its first step, and every value read in it to
  // its last, so none shares storage with another the group uses.
  for (const RowGroup& g : code.row_groups)
    for (LiveRange& r : ranges) {
      if (r.first >= g.first && r.first <= g.last) r.first = g.first;
      if (r.last >= g.first && r.last < g.last) r.last = g.last;
    }
  // An element-wise kernel step writes over an operand that dies there (not in a row group, whose
  // other steps may still read that operand's later rows; nor into or over a value that views lie
  // inside: the result would be written at another offset than it is read).
  std::vector<uint8_t> grouped(n, 0);
  for (const RowGroup& g : code.row_groups) std::fill(grouped.begin() + g.first, grouped.begin() + g.last + 1, 1);
  for (uint32_t k = 0; k < n; ++k) {
    const Step& s = body.steps[k];
    if (grouped[k] || s.kind != StepKind::kKernel || !element_by_element(s.op->kind()) || s.results.size != 1) continue;
    Slot result = code.list(s.results)[0];
    if (value_of[result] < 0 || delta[result] != 0 || inner_views[static_cast<size_t>(value_of[result])]) continue;
    const Slot* in = code.list(s.operands);
    for (uint32_t i = 0; i < s.operands.size; ++i) {
      int64_t v = value_of[in[i]];
      if (v >= 0 && ranges[static_cast<size_t>(v)].last == k && !inner_views[static_cast<size_t>(v)] &&
          *code.slot_types[in[i]] == *code.slot_types[result]) {
        ranges[static_cast<size_t>(value_of[result])].over = v;
        break;
      }
    }
  }
  BufferPlan plan = plan_buffers(ranges);
  for (size_t v = 0; v < ranges.size(); ++v)
    for (Slot slot : slots_of_value[v]) code.slot_offset[slot] = plan.offsets[v] + delta[slot];
  for (uint32_t k = 0; k < n; ++k) {
    Step& s = code.body.steps[k];
    s.planned = s.kind == StepKind::kKernel || s.kind == StepKind::kFused;
    ir::OpKind kind = s.op->kind();
    s.collective = s.kind == StepKind::kKernel && s.operands.size == 1 && s.results.size == 1 &&
                   (kind == ir::OpKind::AllReduce || kind == ir::OpKind::AllGather || kind == ir::OpKind::ReduceScatter);
  }
  code.arena_bytes = plan.bytes;

  // Each result the block computes goes into the buffer of a parameter of its type that no return
  // names (each parameter at most once), else into a fresh buffer.
  int64_t peak = plan.bytes;
  for (Slot p : code.params) peak += bytes_of(*code.slot_types[p]);
  std::vector<uint8_t> taken(code.params.size(), 0);
  for (size_t k = 0; k < code.params.size(); ++k)
    taken[k] = std::find(body.returns.begin(), body.returns.end(), code.params[k]) != body.returns.end();
  code.return_donor.assign(body.returns.size(), -1);
  for (size_t r = 0; r < body.returns.size(); ++r) {
    Slot s = body.returns[r];
    if (code.slot_offset[s] < 0) continue;
    for (size_t k = 0; k < code.params.size() && code.return_donor[r] < 0; ++k)
      if (!taken[k] && *code.slot_types[code.params[k]] == *code.slot_types[s]) {
        taken[k] = 1;
        code.return_donor[r] = static_cast<int32_t>(k);
      }
    if (code.return_donor[r] < 0) peak += bytes_of(*code.slot_types[s]);
  }
  // Results computed in their donors' buffers (executable_code.h: return_in_donor). Without while
  // loops every read of a parameter is an operand or a capture of a step of the body.
  code.return_in_donor.assign(body.returns.size(), 0);
  code.step_in_donor.assign(n, -1);
  code.in_donor_declined = std::make_unique<std::atomic<bool>[]>(body.returns.size());
  if (code.whiles.empty()) {
    // A slot's last read: the last step naming it as an operand or capture, or freeing it (the
    // liveness's frees count the reads of ops inlined into a fused loop).
    std::vector<int64_t> last_read(code.slot_types.size(), -1);
    auto read_at = [&](Slot slot, int64_t k) { last_read[slot] = std::max(last_read[slot], k); };
    for (uint32_t k = 0; k < n; ++k) {
      const Step& s = body.steps[k];
      const Slot* in = code.list(s.operands);
      for (uint32_t i = 0; i < s.operands.size; ++i) read_at(in[i], k);
      for (uint32_t i = 0; i < s.captures.size; ++i) read_at(code.captured[s.captures.begin + i].second, k);
      const Slot* fr = code.list(s.frees);
      for (uint32_t i = 0; i < s.frees.size; ++i) read_at(fr[i], k);
    }
    const Slot* fr = code.list(body.return_frees);
    for (uint32_t i = 0; i < body.return_frees.size; ++i) read_at(fr[i], n);
    for (size_t r = 0; r < body.returns.size(); ++r) {
      int32_t d = code.return_donor[r];
      Slot s = body.returns[r];
      if (d < 0 || value_of[s] < 0) continue;
      auto v = static_cast<size_t>(value_of[s]);
      // Not a reshape's view, nor viewed by one; returned once.
      if (slots_of_value[v].size() != 1 || std::count(body.returns.begin(), body.returns.end(), s) != 1) continue;
      uint32_t k = ranges[v].first;
      const Step& def = body.steps[k];
      int64_t read = last_read[code.params[static_cast<size_t>(d)]];
      // A loop with several results (fusion_riders.h) stores each block's riders after all of the
      // block's reads, and its root's last instruction writes over what it reads: any of its results
      // may go over a donor that the loop reads only in place.
      const auto* multi = dynamic_cast<const MultiResultPlan*>(body.plan.get());
      bool several = def.kind == StepKind::kFused && def.results.size > 1 && multi &&
                     !multi->strided_read(*def.op, code.fn->parameter(static_cast<size_t>(d)));
      if (read < static_cast<int64_t>(k) ||
          (read == k && def.kind == StepKind::kKernel && element_by_element(def.op->kind()) && def.results.size == 1) ||
          (read == k && several)) {
        code.return_in_donor[r] = 1;
      } else if (read == k && def.kind == StepKind::kFused && def.results.size == 1) {
        code.return_in_donor[r] = 2;
        code.step_in_donor[k] = static_cast<int32_t>(r);
      }
    }
  }
  code.stats.in_donor = static_cast<size_t>(
      std::count_if(code.return_in_donor.begin(), code.return_in_donor.end(), [](uint8_t k) { return k != 0; }));
  // A run context holds every callee's frame with its arena; a callee's arguments are views of
  // this frame's values, and it writes its results straight into this arena (exact when planned:
  // a call's results go to fresh buffers only in while bodies).
  code.context_bytes = plan.bytes;
  for (const CallCode& c : code.calls) code.context_bytes += Access::code(*c.callee).context_bytes;
  code.peak_bytes = peak - plan.bytes + code.context_bytes;
  code.planned = code.whiles.empty();
  for (const CallCode& c : code.calls) code.planned = code.planned && c.callee->planned();
}

}  // namespace tessera::exec::detail
