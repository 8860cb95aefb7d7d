// The Communicator: how devices exchange data.
//
// One interface serves host devices (threads of one process, host_communicator.h) and, later, MPI
// ranks. Every collective names the op it serves (for error messages) and its group as global
// device ids in group order; results are concatenated in group order, and reductions fold the
// group's values in group order, so results are the same bit for bit run to run. Every wait has a
// timeout: a device that does not arrive is an error naming the op, the group and the missing
// devices, never a hang.
//
// The typed collectives are virtual: the base class builds each from one Exchange (every member
// reads every input), which any backend can provide; a backend overrides them with faster
// algorithms that give the same bits (host_communicator.h). Each counts the bytes it moves in the
// DeviceTraffic given to set_traffic (accounting.h).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "comm/accounting.h"
#include "ir/element_type.h"
#include "support/error.h"

namespace tessera::comm {

enum class ReduceOp { Sum, Product, Max, Min };

// A collective that waited longer than the communicator's timeout.
class TimeoutError : public support::UserError {
 public:
  using support::UserError::UserError;
};

using Group = std::vector<int64_t>;

// The address of a one-sided message (send and recv): its channel and the global ids of its sender
// and receiver, or -1 for both where messages are matched by channel alone (a send with no
// source_target_pairs, or to the host).
struct MessageKey {
  int64_t channel = 0, source = -1, target = -1;
  auto operator<=>(const MessageKey&) const = default;
};
// "channel 3 from device 1 to device 2", or "channel 3" for a key matched by channel alone.
std::string describe(const MessageKey& key);

// What every device of a collective sees once all have arrived: each member's input, in group
// order. Valid until the Exchange is destroyed; destroying it waits until every member is done
// reading, so inputs stay alive while peers read them.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual std::span<const std::byte> input(size_t member) const = 0;
  size_t members() const { return count_; }
  size_t my_index() const { return index_; }

 protected:
  Exchange(size_t count, size_t index) : count_(count), index_(index) {}

 private:
  size_t count_, index_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int64_t device() const = 0;       // this device's global id
  virtual int64_t num_devices() const = 0;

  // The primitive every collective is built from: post `input`, wait for the group, read peers.
  virtual std::unique_ptr<Exchange> exchange(std::string_view op, const Group& group,
                                             std::span<const std::byte> input) = 0;

  // Typed collectives over `group` (which must contain device()); sizes in bytes are checked.
  virtual void all_reduce(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                          std::span<const std::byte> in, std::span<std::byte> out);
  virtual void all_gather(std::string_view op, const Group& group, std::span<const std::byte> in,
                          std::span<std::byte> out);
  virtual void reduce_scatter(std::string_view op, const Group& group, ir::ElementType type,
                              ReduceOp reduce, std::span<const std::byte> in, std::span<std::byte> out);
  // Chunk i of `in` goes to member i; chunk j of `out` comes from member j.
  virtual void all_to_all(std::string_view op, const Group& group, std::span<const std::byte> in,
                          std::span<std::byte> out);
  // Member 0's `in` to every member's `out`.
  virtual void broadcast(std::string_view op, const Group& group, std::span<const std::byte> in,
                         std::span<std::byte> out);
  // Every device of `group` takes part; `out` receives the input of `source` (a group member), or
  // zeros when there is none.
  virtual void permute(std::string_view op, const Group& group, std::optional<int64_t> source,
                       std::span<const std::byte> in, std::span<std::byte> out);
  virtual void barrier(std::string_view op, const Group& group);

  // One-sided messages, for send and recv: post leaves a copy of `bytes` under `key` and returns at
  // once (a ring of sends, then receives, cannot deadlock); take waits, up to the communicator's
  // timeout, for the oldest message under `key` and copies it into `out`, whose size must be the
  // message's. Messages under one key arrive in the order they were posted. The base class has
  // none and refuses by name; host devices have them (host_messages.cpp).
  virtual void post(std::string_view op, const MessageKey& key, std::span<const std::byte> bytes);
  virtual void take(std::string_view op, const MessageKey& key, std::span<std::byte> out);

  // Where this device's collectives count their bytes (null: not counted). The counter must
  // outlive the communicator's collectives.
  void set_traffic(DeviceTraffic* traffic) { traffic_ = traffic; }
  DeviceTraffic* traffic() const { return traffic_; }

 protected:
  // Adds one collective to the traffic counter, if any.
  void count(std::string_view op, size_t n, size_t operand_bytes, size_t sent, size_t received) {
    if (traffic_)
      traffic_->add(op, static_cast<int64_t>(n), static_cast<int64_t>(operand_bytes), static_cast<int64_t>(sent),
                    static_cast<int64_t>(received));
  }
  // What one Exchange moved: this device's input to each peer, each peer's input to this device.
  void count_exchange(std::string_view op, const Exchange& ex, size_t operand_bytes);

 private:
  DeviceTraffic* traffic_ = nullptr;
};

// Checks that `reduce` is defined on `type` (max and min of complex numbers are not), so that a
// collective fails before it starts rather than halfway, with peers reading its buffers.
void check_reducible(std::string_view op, ir::ElementType type, ReduceOp reduce);

// Folds `value` into `acc` elementwise: acc = acc (op) value, for `count` elements of `type`.
void reduce_into(ir::ElementType type, ReduceOp op, std::span<std::byte> acc,
                 std::span<const std::byte> value);

// The position of `device` in `group`, or an error naming the op.
size_t index_in_group(std::string_view op, const Group& group, int64_t device);

}  // namespace tessera::comm
