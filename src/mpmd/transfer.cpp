// The Mailbox and the RoutedTransport of transfer.h. The Mailbox has one mutex and one condition
// variable for all keys: a pipeline has a handful of stages, so waking every waiter on each send
// costs less than per-key machinery, and a blocking wait (never a spin) keeps idle stages off the
// cores (DESIGN.md §6).
#include "mpmd/transfer.h"

#include <algorithm>

#include "comm/mpi_wire.h"
#include "support/error.h"

namespace tessera::mpmd {

void Mailbox::send(const TransferKey& key, ir::Literal value) {
  {
    std::lock_guard lock(mutex_);
    queues_[key].push_back(std::move(value));
  }
  arrived_.notify_all();
}

ReceiveStatus Mailbox::receive(const TransferKey& key, std::chrono::milliseconds timeout, ir::Literal& out) {
  std::unique_lock lock(mutex_);
  const auto ready = [&] {
    if (aborted_) return true;
    auto it = queues_.find(key);
    return it != queues_.end() && !it->second.empty();
  };
  if (!arrived_.wait_for(lock, timeout, ready)) return ReceiveStatus::kTimedOut;
  if (aborted_) return ReceiveStatus::kAborted;
  auto it = queues_.find(key);
  out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) queues_.erase(it);
  return ReceiveStatus::kReceived;
}

void Mailbox::abort() {
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
  }
  arrived_.notify_all();
}

size_t Mailbox::undelivered() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const auto& [key, queue] : queues_) n += queue.size();
  return n;
}

void encode_literal(std::vector<std::byte>& out, const ir::Literal& x) {
  comm::wire::put<uint32_t>(out, static_cast<uint32_t>(x.element()));
  comm::wire::put<uint32_t>(out, static_cast<uint32_t>(x.shape().size()));
  for (int64_t d : x.shape()) comm::wire::put<int64_t>(out, d);
  comm::wire::put_bytes(out, x.bytes());
}

ir::Literal decode_literal(std::span<const std::byte> in) {
  comm::wire::Reader r(in);
  const auto element = static_cast<ir::ElementType>(r.get<uint32_t>());
  std::vector<int64_t> shape(r.get<uint32_t>());
  for (int64_t& d : shape) d = r.get<int64_t>();
  ir::Literal x(ir::Type(element, std::move(shape)));
  std::span<const std::byte> bytes = r.get_bytes();
  TESSERA_CHECK(bytes.size() == x.bytes().size() && r.done(), "a transferred {} holds {} bytes, not {}",
                ir::to_string(x.type()), bytes.size(), x.bytes().size());
  std::copy(bytes.begin(), bytes.end(), x.bytes().begin());
  return x;
}

int owner_rank(int64_t stage, int64_t stages, int ranks) {
  if (ranks < 1 || stages < 1 || stages % ranks != 0)
    support::fail("pipeline stages on ranks: {} stages do not split evenly over {} ranks (the ranks must divide the "
                  "stages)",
                  stages, ranks);
  if (stage < 0 || stage >= stages) support::fail("pipeline stages on ranks: no stage {} of {}", stage, stages);
  return static_cast<int>(stage * ranks / stages);
}

std::vector<int64_t> local_stages(int64_t stages, const Ranks* ranks) {
  std::vector<int64_t> out;
  for (int64_t s = 0; s < stages; ++s)
    if (ranks == nullptr || owner_rank(s, stages, ranks->size()) == ranks->rank()) out.push_back(s);
  return out;
}

RoutedTransport::RoutedTransport(Ranks& ranks, int64_t stages, uint64_t run)
    : ranks_(ranks), stages_(stages), run_(run), sent_(static_cast<size_t>(ranks.size())),
      received_(static_cast<size_t>(ranks.size())) {
  owner_rank(0, stages, ranks.size());  // checks that the ranks divide the stages
}

void RoutedTransport::send(const TransferKey& key, ir::Literal value) {
  const int to = owner_rank(key.to, stages_, ranks_.size());
  if (to == ranks_.rank()) return local_.send(key, std::move(value));
  ranks_.send(to, run_, key, value);
  ++sent_[static_cast<size_t>(to)];
}

ReceiveStatus RoutedTransport::receive(const TransferKey& key, std::chrono::milliseconds timeout, ir::Literal& out) {
  const int from = owner_rank(key.from, stages_, ranks_.size());
  if (from == ranks_.rank()) return local_.receive(key, timeout, out);
  ReceiveStatus status = ranks_.receive(from, run_, key, timeout, aborted_, out);
  if (status == ReceiveStatus::kReceived) ++received_[static_cast<size_t>(from)];
  return status;
}

void RoutedTransport::abort() {
  aborted_ = true;
  local_.abort();
}

std::vector<int64_t> RoutedTransport::sent() const { return {sent_.begin(), sent_.end()}; }
std::vector<int64_t> RoutedTransport::received() const { return {received_.begin(), received_.end()}; }

}  // namespace tessera::mpmd
