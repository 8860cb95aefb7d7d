// Byte accounting: what each device actually sent and received in its collectives, next to the
// idealized ring model.
//
// A Communicator given a DeviceTraffic (Communicator::set_traffic) adds one entry per collective:
// the bytes of this device's data that peers read or were sent ("sent"), the bytes it read from
// peers or was sent ("received"), and what the ring model of nccl-tests charges one device for the
// same call ((n-1)/n of the whole for all-gather, reduce-scatter and all-to-all, 2(n-1)/n for
// all-reduce, the operand for a permute or broadcast, nothing for a barrier). The counts are what
// the algorithm moved between devices, not copies a device makes inside its own memory; so they
// show when an algorithm moves more than the ring would (a direct exchange reads every peer's
// whole input) or as much.
//
// A Traffic holds one DeviceTraffic per device of a run; hand it to the run (ParallelOptions,
// SessionOptions) and read it when the run is over. Each DeviceTraffic is written only by its own
// device's thread, so counting takes no lock; read it only when no collective is running.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::comm {

struct TrafficCount {
  int64_t calls = 0;
  int64_t sent = 0;      // bytes of this device's data that reached peers
  int64_t received = 0;  // bytes of peers' data that reached this device
  int64_t ring = 0;      // what the ring model charges this device for the same calls
  TrafficCount& operator+=(const TrafficCount& o);
};

// The ring model's bytes per device for one collective of `kind` (the op name, with or without
// its "stablehlo." prefix) on a group of `n`, whose operand on this device has `operand_bytes`.
// Kinds it does not know cost 0.
int64_t ring_bytes(std::string_view kind, int64_t n, int64_t operand_bytes);

// "stablehlo.all_reduce" -> "all_reduce": the name collectives are counted under.
std::string_view collective_kind(std::string_view op);

class DeviceTraffic {
 public:
  // One collective: op names its kind (collective_kind), n its group size.
  void add(std::string_view op, int64_t n, int64_t operand_bytes, int64_t sent, int64_t received);
  TrafficCount total() const;
  const std::map<std::string, TrafficCount, std::less<>>& by_kind() const { return by_kind_; }
  void clear() { by_kind_.clear(); }

 private:
  std::map<std::string, TrafficCount, std::less<>> by_kind_;
};

class Traffic {
 public:
  explicit Traffic(int64_t num_devices);
  int64_t num_devices() const { return static_cast<int64_t>(devices_.size()); }
  DeviceTraffic& device(int64_t d);
  const DeviceTraffic& device(int64_t d) const;
  void clear();

  // A table for people: per device and per collective kind, calls, bytes sent and received, the
  // ring model's bytes, and received / ring.
  std::string table() const;

 private:
  std::vector<DeviceTraffic> devices_;
};

}  // namespace tessera::comm
