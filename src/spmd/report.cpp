// The partitioning report (see report.h).
#include "spmd/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "support/strings.h"

namespace tessera::spmd {

int64_t byte_size(const ir::Type& t) {
  if (t.is_tensor()) return t.num_elements() * ir::info(t.element).bytes;
  int64_t n = 0;  // a token holds nothing; a tuple or future holds its members
  for (const ir::Type& m : t.elements) n += byte_size(m);
  return n;
}

int64_t peak_live_bytes(const ir::Function& fn) {
  const auto& ops = fn.body().ops();
  std::unordered_map<const ir::Value*, size_t> last;  // value -> index of its last reader
  std::function<void(const ir::Block&, size_t)> reads = [&](const ir::Block& b, size_t at) {
    for (const auto& op : b.ops()) {
      for (const ir::Value* v : op->operands()) last[v] = std::max(last[v], at);
      for (const auto& r : op->regions()) reads(*r, at);
    }
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const ir::Value* v : ops[i]->operands()) last[v] = i;
    for (const auto& r : ops[i]->regions()) reads(*r, i);
  }
  int64_t live = 0, peak = 0;
  for (const auto& a : fn.body().arguments()) live += byte_size(a->type());
  peak = live;
  std::vector<std::vector<const ir::Value*>> dies(ops.size());
  for (const auto& [v, i] : last) dies[i].push_back(v);
  for (const auto& a : fn.body().arguments())
    if (!last.count(a.get())) live -= byte_size(a->type());
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const ir::Value* r : ops[i]->results()) live += byte_size(r->type());
    peak = std::max(peak, live);
    for (const ir::Value* v : dies[i]) live -= byte_size(v->type());
    for (const ir::Value* r : ops[i]->results())
      if (!last.count(r)) live -= byte_size(r->type());
  }
  return peak;
}

std::map<std::string, int64_t> Report::counts() const {
  std::map<std::string, int64_t> out;
  for (const auto& c : collectives) ++out[c.kind];
  return out;
}

int64_t Report::count(const std::string& kind) const {
  auto c = counts();
  auto it = c.find(kind);
  return it == c.end() ? 0 : it->second;
}

int64_t Report::bytes_per_device() const {
  int64_t n = 0;
  for (const auto& c : collectives) n += c.bytes_per_device;
  return n;
}

std::string Report::to_string() const {
  std::string out = "parameters:\n";
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto& p = parameters[i];
    out += fmt::format("  %arg{}: {} -> piece {} ({} bytes per device)\n", i, ir::to_string(p.global),
                       support::shape_string(p.local_shape), p.bytes_per_device);
  }
  out += fmt::format("collectives: {}\n", collectives.size());
  for (const auto& c : collectives)
    out += fmt::format("  {:<20} group {:<3} {:>10} bytes per device  for {}\n", c.kind, c.group_size,
                       c.bytes_per_device, c.origin);
  for (const auto& [kind, n] : counts()) out += fmt::format("  {} x {}\n", n, kind);
  out += fmt::format("total bytes moved per device: {}\n", bytes_per_device());
  return out;
}

std::string Report::explain() const {
  std::string out = fmt::format("explain: {} collectives\n", collectives.size());
  for (const auto& c : collectives)
    out += fmt::format("  {:<20} group {:<3} {:>10} bytes per device  for {}{}{}\n", c.kind, c.group_size,
                       c.bytes_per_device, c.origin, c.forced_by.empty() ? "" : ", ", c.forced_by);
  for (const std::string& w : warnings()) out += "warning: " + w + "\n";
  return out;
}

std::vector<std::string> Report::warnings() const {
  std::vector<std::string> out;
  for (const auto& c : collectives)
    if (!c.avoidable.empty())
      out.push_back(fmt::format("{} for {}{}{} ({} bytes per device): {}", c.kind, c.origin,
                                c.forced_by.empty() ? "" : ", ", c.forced_by, c.bytes_per_device, c.avoidable));
  return out;
}

void record_written(Report& report, const ir::Op& op, const std::string& origin) {
  if (!ir::has_trait(op.kind(), ir::kCollective) || op.num_results() == 0) return;
  int64_t n = 1;
  if (const auto* g = op.attrs().find<ir::IntMatrix>("replica_groups")) n = std::max<int64_t>(1, g->cols);
  int64_t in = byte_size(op.operand(0)->type()), out = byte_size(op.result(0)->type());
  std::string kind(op.name().substr(op.name().find('.') + 1));
  int64_t bytes = 0;
  switch (op.kind()) {
    case ir::OpKind::AllReduce: bytes = 2 * in * (n - 1) / n; break;
    case ir::OpKind::AllGather: bytes = out * (n - 1) / n; break;
    case ir::OpKind::ReduceScatter: case ir::OpKind::AllToAll: bytes = in * (n - 1) / n; break;
    default: bytes = in; break;
  }
  report.collectives.push_back({kind, origin, n, bytes, &op, "", ""});
}

}  // namespace tessera::spmd
