// The Communicator: how devices exchange data.
//
// One interface serves host devices (threads of one process, host_communicator.h) and, later, MPI
// ranks. Every collective names the op it serves (for error messages) and its group as global
// device ids in group order; results are concatenated in group order, and reductions fold the
// group's values in group order, so results are the same bit for bit run to run. Every wait has a
// timeout: a device that does not arrive is an error naming the op, the group and the missing
// devices, never a hang.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

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
  void all_reduce(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                  std::span<const std::byte> in, std::span<std::byte> out);
  void all_gather(std::string_view op, const Group& group, std::span<const std::byte> in,
                  std::span<std::byte> out);
  void reduce_scatter(std::string_view op, const Group& group, ir::ElementType type,
                      ReduceOp reduce, std::span<const std::byte> in, std::span<std::byte> out);
  // Chunk i of `in` goes to member i; chunk j of `out` comes from member j.
  void all_to_all(std::string_view op, const Group& group, std::span<const std::byte> in,
                  std::span<std::byte> out);
  // Member 0's `in` to every member's `out`.
  void broadcast(std::string_view op, const Group& group, std::span<const std::byte> in,
                 std::span<std::byte> out);
  // Every device of `group` takes part; `out` receives the input of `source` (a group member), or
  // zeros when there is none.
  void permute(std::string_view op, const Group& group, std::optional<int64_t> source,
               std::span<const std::byte> in, std::span<std::byte> out);
  void barrier(std::string_view op, const Group& group);
};

// Folds `value` into `acc` elementwise: acc = acc (op) value, for `count` elements of `type`.
void reduce_into(ir::ElementType type, ReduceOp op, std::span<std::byte> acc,
                 std::span<const std::byte> value);

// The position of `device` in `group`, or an error naming the op.
size_t index_in_group(std::string_view op, const Group& group, int64_t device);

}  // namespace tessera::comm
