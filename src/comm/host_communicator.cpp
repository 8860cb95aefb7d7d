#include "comm/host_communicator.h"

#include <set>

#include "support/strings.h"

namespace tessera::comm {

struct HostWorld::Slot {
  std::string op;
  std::vector<std::span<const std::byte>> inputs;
  std::vector<bool> arrived;
  std::vector<bool> came;  // arrived at some point (a timed-out device withdraws but came)
  size_t num_arrived = 0, num_done = 0;
};

namespace {

class HostExchange : public Exchange {
 public:
  HostExchange(std::mutex& mu, std::condition_variable& cv, std::chrono::milliseconds timeout,
               std::shared_ptr<void> keep, const std::vector<std::span<const std::byte>>& inputs,
               size_t* num_done, size_t index)
      : Exchange(inputs.size(), index), mu_(mu), cv_(cv), timeout_(timeout), keep_(std::move(keep)),
        inputs_(inputs), num_done_(num_done) {}

  // Leaving waits until every member has finished reading, so no input dies while being read.
  ~HostExchange() override {
    std::unique_lock lock(mu_);
    ++*num_done_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, timeout_, [&] { return *num_done_ == members(); }))
      fmt::print(stderr, "tessera: a peer did not finish reading a collective's inputs in time\n");
  }

  std::span<const std::byte> input(size_t member) const override { return inputs_.at(member); }

 private:
  std::mutex& mu_;
  std::condition_variable& cv_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<void> keep_;  // the slot, alive until the last member leaves
  const std::vector<std::span<const std::byte>>& inputs_;
  size_t* num_done_;
};

}  // namespace

HostWorld::HostWorld(int64_t num_devices, std::chrono::milliseconds timeout)
    : num_devices_(num_devices), timeout_(timeout) {
  if (num_devices < 1) support::fail("a host world needs at least one device, got {}", num_devices);
}

std::shared_ptr<HostWorld::Slot> HostWorld::join(std::string_view op, const Group& group,
                                                 int64_t sequence, size_t index,
                                                 std::span<const std::byte> input) {
  std::unique_lock lock(mu_);
  auto key = std::make_pair(group, sequence);
  std::shared_ptr<Slot>& entry = open_[key];
  if (!entry) {
    entry = std::make_shared<Slot>();
    entry->op = op;
    entry->inputs.resize(group.size());
    entry->arrived.resize(group.size());
    entry->came.resize(group.size());
  }
  std::shared_ptr<Slot> slot = entry;
  if (slot->op != op)
    support::fail("{} on device {} meets {} of another device on group [{}]: devices issued "
                  "different collectives",
                  op, group[index], slot->op, support::join(group, ", "));
  slot->inputs[index] = input;
  slot->arrived[index] = true;
  slot->came[index] = true;
  if (++slot->num_arrived == group.size()) {
    open_.erase(key);
    cv_.notify_all();
    return slot;
  }
  if (cv_.wait_for(lock, timeout_, [&] { return slot->num_arrived == group.size(); })) return slot;
  // Withdraw, so a late peer does not read this device's input after it is gone.
  slot->arrived[index] = false;
  slot->inputs[index] = {};
  if (--slot->num_arrived == 0) open_.erase(key);
  std::vector<int64_t> missing;
  for (size_t m = 0; m < group.size(); ++m)
    if (!slot->came[m]) missing.push_back(group[m]);
  throw TimeoutError(fmt::format(
      "{} on device {} timed out after {} ms waiting for device{} {} (group [{}])", op,
      group[index], timeout_.count(), missing.size() == 1 ? "" : "s", support::join(missing, ", "),
      support::join(group, ", ")));
}

HostCommunicator::HostCommunicator(HostWorld& world, int64_t device) : world_(&world), device_(device) {
  if (device < 0 || device >= world.num_devices())
    support::fail("device {} is outside a host world of {} devices", device, world.num_devices());
}

std::unique_ptr<Exchange> HostCommunicator::exchange(std::string_view op, const Group& group,
                                                     std::span<const std::byte> input) {
  std::set<int64_t> seen;
  for (int64_t d : group)
    if (d < 0 || d >= world_->num_devices() || !seen.insert(d).second)
      support::fail("{}: group [{}] is not a set of devices of 0..{}", op, support::join(group, ", "),
                    world_->num_devices() - 1);
  size_t index = index_in_group(op, group, device_);
  int64_t sequence = sequence_[group]++;
  std::shared_ptr<HostWorld::Slot> slot = world_->join(op, group, sequence, index, input);
  return std::make_unique<HostExchange>(world_->mu_, world_->cv_, world_->timeout_, slot,
                                        slot->inputs, &slot->num_done, index);
}

}  // namespace tessera::comm
