// Byte accounting (see accounting.h): per-device counters and the ring model they are compared with.
#include "comm/accounting.h"

#include <fmt/format.h>

#include "support/error.h"

namespace tessera::comm {

TrafficCount& TrafficCount::operator+=(const TrafficCount& o) {
  calls += o.calls;
  sent += o.sent;
  received += o.received;
  ring += o.ring;
  return *this;
}

std::string_view collective_kind(std::string_view op) {
  for (std::string_view prefix : {"stablehlo.", "sdy."})
    if (op.starts_with(prefix)) return op.substr(prefix.size());
  return op;
}

int64_t ring_bytes(std::string_view kind, int64_t n, int64_t operand_bytes) {
  kind = collective_kind(kind);
  if (n <= 1) return 0;
  // nccl-tests' bus bandwidth factors applied to the whole buffer: the all-gather's whole is n
  // operands, the reduce-scatter's and all-to-all's whole is the operand.
  if (kind == "all_reduce") return 2 * (n - 1) * operand_bytes / n;
  if (kind == "all_gather") return (n - 1) * operand_bytes;
  if (kind == "reduce_scatter" || kind == "all_to_all") return (n - 1) * operand_bytes / n;
  if (kind == "collective_permute" || kind == "permute" || kind == "collective_broadcast" || kind == "broadcast")
    return operand_bytes;
  return 0;
}

void DeviceTraffic::add(std::string_view op, int64_t n, int64_t operand_bytes, int64_t sent, int64_t received) {
  std::string_view kind = collective_kind(op);
  auto it = by_kind_.find(kind);
  if (it == by_kind_.end()) it = by_kind_.emplace(std::string(kind), TrafficCount{}).first;
  it->second += TrafficCount{1, sent, received, ring_bytes(kind, n, operand_bytes)};
}

TrafficCount DeviceTraffic::total() const {
  TrafficCount t;
  for (const auto& [kind, c] : by_kind_) t += c;
  return t;
}

Traffic::Traffic(int64_t num_devices) {
  if (num_devices < 1) support::fail("byte accounting for {} devices; need at least 1", num_devices);
  devices_.resize(static_cast<size_t>(num_devices));
}

DeviceTraffic& Traffic::device(int64_t d) {
  if (d < 0 || d >= num_devices())
    support::fail("byte accounting: device {} is outside the {} devices counted", d, num_devices());
  return devices_[static_cast<size_t>(d)];
}

const DeviceTraffic& Traffic::device(int64_t d) const { return const_cast<Traffic*>(this)->device(d); }

void Traffic::clear() {
  for (auto& d : devices_) d.clear();
}

std::string Traffic::table() const {
  std::string out = fmt::format("{:<8} {:<20} {:>7} {:>14} {:>14} {:>14} {:>9}\n", "device", "collective", "calls",
                                "sent B", "received B", "ring model B", "recv/ring");
  auto row = [&](const std::string& who, std::string_view kind, const TrafficCount& c) {
    std::string ratio = c.ring > 0 ? fmt::format("{:.2f}", double(c.received) / double(c.ring)) : "-";
    out += fmt::format("{:<8} {:<20} {:>7} {:>14} {:>14} {:>14} {:>9}\n", who, kind, c.calls, c.sent, c.received,
                       c.ring, ratio);
  };
  for (int64_t d = 0; d < num_devices(); ++d) {
    const DeviceTraffic& t = devices_[static_cast<size_t>(d)];
    for (const auto& [kind, c] : t.by_kind()) row(fmt::format("{}", d), kind, c);
    if (t.by_kind().size() > 1) row(fmt::format("{}", d), "(all)", t.total());
  }
  return out;
}

}  // namespace tessera::comm
