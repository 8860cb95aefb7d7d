// Trace (see trace.h): labels, tracks, and the trace-event JSON they make.
#include "interp/trace.h"

#include <fmt/format.h>

#include "ir/attribute.h"
#include "ir/element_type.h"
#include "ir/module.h"
#include "ir/op_kind.h"
#include "ir/type.h"

namespace tessera::interp {

namespace {

std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

std::string rows_string(const ir::IntMatrix& m) {
  std::string out = "[";
  for (int64_t r = 0; r < m.rows; ++r) {
    out += r ? ", [" : "[";
    for (int64_t c = 0; c < m.cols; ++c) {
      int64_t v = m.values[static_cast<size_t>(r * m.cols + c)];
      if (v == -1) continue;  // the padding of a ragged group
      out += fmt::format("{}{}", c ? ", " : "", v);
    }
    out += "]";
  }
  return out + "]";
}

// Microseconds with the nanoseconds kept exactly (three decimals).
std::string micros(int64_t ns) {
  return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", (ns < 0 ? -ns : ns) / 1000, (ns < 0 ? -ns : ns) % 1000);
}

}  // namespace

TraceLabel op_label(const ir::Op& op, bool fused) {
  TraceLabel l;
  l.name = std::string(op.name());
  std::string types;
  for (size_t r = 0; r < op.num_results(); ++r) types += (r ? " " : "") + ir::to_string(op.result(r)->type());
  l.args = fmt::format("\"types\": \"{}\"", escape(types));
  if (ir::has_trait(op.kind(), ir::OpTrait::kCollective)) {
    l.category = "collective";
    int64_t bytes = 0;
    for (const ir::Value* v : op.operands())
      bytes += v->type().num_elements() * ir::info(v->type().element).bytes;
    l.args += fmt::format(", \"bytes\": {}", bytes);
    if (const auto* g = op.attrs().find<ir::IntMatrix>("replica_groups"))
      l.args += fmt::format(", \"groups\": \"{}\"", rows_string(*g));
    if (const auto* p = op.attrs().find<ir::IntMatrix>("source_target_pairs"))
      l.args += fmt::format(", \"pairs\": \"{}\"", rows_string(*p));
  } else {
    l.category = fused ? "fused" : "op";
  }
  return l;
}

Trace::Trace(int64_t pid) : pid_(pid), origin_(Clock::now()) {
  static std::atomic<uint64_t> next{1};
  serial_ = next++;
}

uint32_t Trace::intern(const TraceLabel& label) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = ids_.emplace(label, static_cast<uint32_t>(labels_.size()));
  if (fresh) labels_.push_back(&it->first);
  return it->second;
}

std::vector<TraceSpan>& Trace::track(int64_t device) {
  std::lock_guard lock(mu_);
  auto& t = tracks_[device];
  if (!t) t = std::make_unique<std::vector<TraceSpan>>();
  return *t;
}

size_t Trace::size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [device, spans] : tracks_) n += spans->size();
  return n;
}

std::string Trace::events_json() const {
  std::lock_guard lock(mu_);
  std::string out = fmt::format(
      R"({{"name": "process_name", "ph": "M", "pid": {0}, "tid": 0, "args": {{"name": "rank {0}"}}}})", pid_);
  for (const auto& [device, spans] : tracks_) {
    out += fmt::format(
        R"(,
{{"name": "thread_name", "ph": "M", "pid": {0}, "tid": {1}, "args": {{"name": "device {1}"}}}})", pid_, device);
    for (const TraceSpan& s : *spans) {
      const TraceLabel& l = *labels_[s.label];
      out += fmt::format(
          R"(,
{{"name": "{}", "cat": "{}", "ph": "X", "ts": {}, "dur": {}, "pid": {}, "tid": {}, "args": {{"step": {}{}{}}}}})",
          escape(l.name), l.category, micros(s.start_ns), micros(s.end_ns - s.start_ns), pid_, device, s.step,
          l.args.empty() ? "" : ", ", l.args);
    }
  }
  return out;
}

std::string Trace::document(const std::vector<std::string>& events) {
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  for (const std::string& e : events) {
    if (e.empty()) continue;
    if (!first) out += ",\n";
    out += e;
    first = false;
  }
  return out + "\n]}\n";
}

}  // namespace tessera::interp
