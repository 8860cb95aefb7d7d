// Host devices' collectives over per-group channels in shared memory (see host_communicator.h).
#include "comm/host_communicator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <set>
#include <thread>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ir/element_type.h"
#include "support/strings.h"

namespace tessera::comm {
namespace {

enum class Kind : uint8_t { Exchange, AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Permute, Barrier };

// Waiting: a short spin catches peers that are already running; yielding then hands the core to
// peers that still have work (more device threads than cores is the common case here); blocking
// after that stops a long wait from eating a core.
constexpr int kSpins = 16;
constexpr auto kYieldFor = std::chrono::microseconds(100);
// Reductions of large messages go through cache-sized blocks: copy the first input's block, then
// fold the others into it while it is still in L1/L2.
constexpr size_t kFoldBlock = 16 * 1024;

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

void check_size(std::string_view op, std::string_view what, size_t got, size_t want) {
  if (got != want) support::fail("{}: {} has {} bytes, expected {}", op, what, got, want);
}

void copy_bytes(std::byte* to, const std::byte* from, size_t n) {
  if (n != 0 && to != from) std::memcpy(to, from, n);
}

// Results bigger than the caches are written with non-temporal stores: they skip the read for
// ownership that a normal store of a line not in cache costs, a third of the memory traffic of a
// copy, and they do not evict the inputs still to be read.
constexpr size_t kStreamBytes = 16 << 20;  // all members' results together; L3 is 32 MiB here

void stream_bytes(std::byte* to, const std::byte* from, size_t n) {
#if defined(__x86_64__)
  size_t head = std::min(n, (16 - reinterpret_cast<uintptr_t>(to) % 16) % 16);
  copy_bytes(to, from, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const auto* s = reinterpret_cast<const __m128i*>(from + i);
    auto* d = reinterpret_cast<__m128i*>(to + i);
    __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1), c = _mm_loadu_si128(s + 2),
            e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  for (; i + 16 <= n; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i)));
  copy_bytes(to + i, from + i, n - i);
  _mm_sfence();  // non-temporal stores are weakly ordered: complete them before the next meeting
#else
  copy_bytes(to, from, n);
#endif
}

void put_bytes(std::byte* to, const std::byte* from, size_t n, bool stream) {
  if (stream && to != from) stream_bytes(to, from, n);
  else copy_bytes(to, from, n);
}

// One member's part of the meeting that starts a collective.
struct Post {
  int64_t epoch = 0;  // the meeting it belongs to; 0 when withdrawn or not yet written
  std::string op;
  Kind kind = Kind::Barrier;
  size_t bytes = 0;                // the input's size
  const std::byte* in = nullptr;   // the member's own buffers (large messages)
  std::byte* out = nullptr;
  int64_t source = -1;             // permute: the group position it receives from
  std::vector<std::byte> staged;   // a copy of the input (small messages)
};

struct alignas(64) MemberState {
  std::atomic<int64_t> came{0};  // the last meeting it arrived at (kept when it withdraws)
  int64_t meetings = 0;          // meetings it completed; touched only by its own thread
  Post posts[2];                 // by the parity of the meeting
};

}  // namespace

struct HostWorld::Channel {
  explicit Channel(Group g) : group(std::move(g)), n(group.size()), members(new MemberState[n]) {}
  Group group;
  size_t n;
  alignas(64) std::atomic<int64_t> arrived{0};  // arrivals at every meeting so far
  alignas(64) std::atomic<int> sleepers{0};     // members blocked on cv
  std::mutex mu;                                // guards posts' headers while they are written
  std::condition_variable cv;
  std::unique_ptr<MemberState[]> members;
};

// One member's side of a channel during one collective.
struct HostCommunicator::Meeting {
  HostWorld::Channel& ch;
  size_t me;
  std::string_view op;
  std::chrono::milliseconds timeout;

  size_t n() const { return ch.n; }
  MemberState& self() const { return ch.members[me]; }
  const Post& post(size_t m, int64_t epoch) const { return ch.members[m].posts[epoch % 2]; }
  int64_t device() const { return ch.group[me]; }

  // Posts this member's part of the next meeting after checking it against the peers already
  // there (one of each pair of members posts second and so sees the other). Small messages copy
  // their input now: peers read the copy only after this meeting is complete.
  int64_t open(Kind kind, std::span<const std::byte> in, std::byte* out, int64_t source, bool stage) {
    int64_t e = self().meetings + 1;
    Post& p = self().posts[e % 2];
    if (stage) p.staged.assign(in.begin(), in.end());
    std::lock_guard lock(ch.mu);
    for (size_t m = 0; m < ch.n; ++m) {
      const Post& q = post(m, e);
      if (m == me || q.epoch != e) continue;
      if (q.op != op || q.kind != kind)
        support::fail("{} on device {} meets {} of another device on group [{}]: devices issued different collectives",
                      op, device(), q.op, support::join(ch.group, ", "));
      if (kind != Kind::Exchange && q.bytes != in.size())
        support::fail("{} on device {} has {} bytes, but device {} of group [{}] has {} bytes for it", op, device(),
                      in.size(), ch.group[m], support::join(ch.group, ", "), q.bytes);
    }
    p.epoch = e;
    p.op.assign(op);
    p.kind = kind;
    p.bytes = in.size();
    p.in = in.data();
    p.out = out;
    p.source = source;
    return e;
  }

  // Arrives at the next meeting and waits until every member has; a TimeoutError (after
  // withdrawing the arrival) when some do not come in time.
  void meet() {
    int64_t e = self().meetings + 1;
    self().came.store(e);
    ch.arrived.fetch_add(1);
    if (ch.sleepers.load() > 0) {
      std::lock_guard lock(ch.mu);
      ch.cv.notify_all();
    }
    auto target = static_cast<int64_t>(ch.n) * e;
    if (!wait(target)) {
      int64_t c = ch.arrived.load();
      bool withdrawn = false;
      while (c < target && !withdrawn) withdrawn = ch.arrived.compare_exchange_weak(c, c - 1);
      if (withdrawn) {
        {
          std::lock_guard lock(ch.mu);
          Post& p = self().posts[e % 2];
          if (p.epoch == e) p.epoch = 0;
        }
        std::vector<int64_t> missing;
        for (size_t m = 0; m < ch.n; ++m)
          if (ch.members[m].came.load() < e) missing.push_back(ch.group[m]);
        throw TimeoutError(fmt::format("{} on device {} timed out after {} ms waiting for device{} {} (group [{}])",
                                       op, device(), timeout.count(), missing.size() == 1 ? "" : "s",
                                       support::join(missing, ", "), support::join(ch.group, ", ")));
      }
      // The last peer came while this device was giving up: the meeting is complete after all.
    }
    self().meetings = e;
  }

  bool wait(int64_t target) {
    auto done = [&] { return ch.arrived.load(std::memory_order_acquire) >= target; };
    for (int i = 0; i < kSpins; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < kYieldFor) {
      if (done()) return true;
      std::this_thread::yield();
    }
    std::unique_lock lock(ch.mu);
    ch.sleepers.fetch_add(1);
    bool ok = ch.cv.wait_until(lock, start + timeout, done);
    ch.sleepers.fetch_sub(1);
    return ok;
  }

  // Where member m's input is: its copy (small) or its own buffer (large).
  const std::byte* input(size_t m, int64_t e, bool staged) const {
    const Post& p = post(m, e);
    return staged ? p.staged.data() : p.in;
  }
};

namespace {

// The elements [lo, hi) of member k's chunk when `elements` are split into n chunks.
std::pair<size_t, size_t> chunk_of(size_t k, size_t n, size_t elements) {
  size_t per = (elements + n - 1) / n;
  size_t lo = std::min(k * per, elements);
  return {lo, std::min(lo + per, elements)};
}

// Folds elements [offset, offset + bytes) of srcs[0] (op) srcs[1] (op) ... left to right, per
// element (the group order of the plain exchange), block by block in cache, and writes each
// folded block to every destination at the same offset. A destination may be one of the sources
// (an in-place all_reduce): a block is folded in scratch space, so its sources are read before
// any destination is written.
// One pointer per member of a meeting, inline for groups of up to kInline (a steady-state
// collective allocates nothing; larger groups take a heap block).
template <typename P>
class PerMember {
 public:
  explicit PerMember(size_t n) : n_(n) {
    if (n > kInline) heap_.resize(n);
  }
  P& operator[](size_t k) { return data()[k]; }
  operator std::span<const P>() const { return {n_ > kInline ? heap_.data() : inline_.data(), n_}; }

 private:
  static constexpr size_t kInline = 64;
  P* data() { return n_ > kInline ? heap_.data() : inline_.data(); }
  size_t n_;
  std::array<P, kInline> inline_{};
  std::vector<P> heap_;
};

void fold_chunk(ir::ElementType type, ReduceOp reduce, std::span<const std::byte* const> srcs, size_t offset,
                size_t bytes, std::span<std::byte* const> dsts, bool stream) {
  thread_local std::vector<std::byte> scratch(kFoldBlock);
  for (size_t at = 0; at < bytes; at += kFoldBlock) {
    size_t len = std::min(kFoldBlock, bytes - at);
    std::span<std::byte> d = std::span(scratch).first(len);
    copy_bytes(d.data(), srcs[0] + offset + at, len);
    for (size_t m = 1; m < srcs.size(); ++m) reduce_into(type, reduce, d, {srcs[m] + offset + at, len});
    for (std::byte* dst : dsts) put_bytes(dst + at, d.data(), len, stream);
  }
}

// Withdraw-free exchange: the inputs as posted, and a last meeting when it is destroyed, so that
// no member's input dies while a peer reads it.
class HostExchange : public Exchange {
 public:
  HostExchange(HostCommunicator::Meeting* meeting, std::vector<std::span<const std::byte>> inputs, size_t index)
      : Exchange(inputs.size(), index), meeting_(meeting), inputs_(std::move(inputs)) {}
  ~HostExchange() override;
  std::span<const std::byte> input(size_t member) const override { return inputs_.at(member); }

 private:
  std::unique_ptr<HostCommunicator::Meeting> meeting_;
  std::vector<std::span<const std::byte>> inputs_;
};

HostExchange::~HostExchange() {
  try {
    meeting_->meet();
  } catch (const std::exception& e) {
    fmt::print(stderr, "tessera: a peer did not finish reading a collective's inputs in time: {}\n", e.what());
  }
}

}  // namespace

HostWorld::HostWorld(int64_t num_devices, std::chrono::milliseconds timeout)
    : num_devices_(num_devices), timeout_(timeout) {
  if (num_devices < 1) support::fail("a host world needs at least one device, got {}", num_devices);
}

HostWorld::~HostWorld() = default;

HostWorld::Channel& HostWorld::channel(const Group& group) {
  std::lock_guard lock(mu_);
  std::unique_ptr<Channel>& c = channels_[group];
  if (!c) c = std::make_unique<Channel>(group);
  return *c;
}

HostCommunicator::HostCommunicator(HostWorld& world, int64_t device) : world_(&world), device_(device) {
  if (device < 0 || device >= world.num_devices())
    support::fail("device {} is outside a host world of {} devices", device, world.num_devices());
}

HostWorld::Channel& HostCommunicator::channel(std::string_view op, const Group& group) {
  auto it = channels_.find(group);
  if (it != channels_.end()) return *it->second;
  std::set<int64_t> seen;
  for (int64_t d : group)
    if (d < 0 || d >= world_->num_devices() || !seen.insert(d).second)
      support::fail("{}: group [{}] is not a set of devices of 0..{}", op, support::join(group, ", "),
                    world_->num_devices() - 1);
  index_in_group(op, group, device_);
  return *channels_.emplace(group, &world_->channel(group)).first->second;
}

std::unique_ptr<Exchange> HostCommunicator::exchange(std::string_view op, const Group& group,
                                                     std::span<const std::byte> input) {
  auto m = std::make_unique<Meeting>(Meeting{channel(op, group), index_in_group(op, group, device_), op,
                                             world_->timeout()});
  int64_t e = m->open(Kind::Exchange, input, nullptr, -1, false);
  m->meet();
  std::vector<std::span<const std::byte>> inputs;
  for (size_t k = 0; k < m->n(); ++k) inputs.emplace_back(m->post(k, e).in, m->post(k, e).bytes);
  size_t me = m->me;
  auto ex = std::make_unique<HostExchange>(m.release(), std::move(inputs), me);
  count_exchange(op, *ex, input.size());
  return ex;
}

void HostCommunicator::all_reduce(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                                  std::span<const std::byte> in, std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  check_reducible(op, type, reduce);
  Meeting m{channel(op, group), index_in_group(op, group, device_), op, world_->timeout()};
  size_t n = m.n(), me = m.me;
  bool small = in.size() <= HostWorld::kSmallReduceBytes;
  int64_t e = m.open(Kind::AllReduce, in, out.data(), -1, small);
  m.meet();
  PerMember<const std::byte*> srcs(n);
  for (size_t k = 0; k < n; ++k) srcs[k] = m.input(k, e, small);
  std::byte* const dst[] = {out.data()};
  if (small) {  // every member folds every copy: one meeting, the least latency
    fold_chunk(type, reduce, srcs, 0, in.size(), dst, false);
    count(op, n, in.size(), (n - 1) * in.size(), (n - 1) * in.size());
    return;
  }
  // A reduce-scatter and an all-gather in one pass: member `me` folds chunk `me` of every input
  // and writes it into every member's output; one more meeting, and every output is whole.
  size_t es = static_cast<size_t>(ir::info(type).bytes);
  auto [lo, hi] = chunk_of(me, n, in.size() / es);
  PerMember<std::byte*> outs(n);
  for (size_t k = 0; k < n; ++k) outs[k] = m.post(k, e).out + lo * es;
  fold_chunk(type, reduce, srcs, lo * es, (hi - lo) * es, outs, n * in.size() >= kStreamBytes);
  m.meet();
  size_t mine = (hi - lo) * es, moved = (in.size() - mine) + (n - 1) * mine;
  count(op, n, in.size(), moved, moved);
}

void HostCommunicator::reduce_scatter(std::string_view op, const Group& group, ir::ElementType type,
                                      ReduceOp reduce, std::span<const std::byte> in, std::span<std::byte> out) {
  check_size(op, "the operand", in.size(), out.size() * group.size());
  check_reducible(op, type, reduce);
  Meeting m{channel(op, group), index_in_group(op, group, device_), op, world_->timeout()};
  size_t n = m.n();
  bool small = in.size() <= HostWorld::kSmallBytes;
  int64_t e = m.open(Kind::ReduceScatter, in, out.data(), -1, small);
  m.meet();
  PerMember<const std::byte*> srcs(n);
  for (size_t k = 0; k < n; ++k) srcs[k] = m.input(k, e, small);
  std::byte* const dst[] = {out.data()};
  fold_chunk(type, reduce, srcs, m.me * out.size(), out.size(), dst, false);
  if (!small) m.meet();
  count(op, n, in.size(), in.size() - out.size(), (n - 1) * out.size());
}

void HostCommunicator::all_gather(std::string_view op, const Group& group, std::span<const std::byte> in,
                                  std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size() * group.size());
  Meeting m{channel(op, group), index_in_group(op, group, device_), op, world_->timeout()};
  size_t n = m.n();
  bool small = in.size() <= HostWorld::kSmallBytes;
  int64_t e = m.open(Kind::AllGather, in, out.data(), -1, small);
  m.meet();
  bool stream = n * out.size() >= kStreamBytes;
  for (size_t k = 0; k < n; ++k)
    put_bytes(out.data() + k * in.size(), k == m.me ? in.data() : m.input(k, e, small), in.size(), stream);
  if (!small) m.meet();
  count(op, n, in.size(), (n - 1) * in.size(), (n - 1) * in.size());
}

void HostCommunicator::all_to_all(std::string_view op, const Group& group, std::span<const std::byte> in,
                                  std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  if (in.size() % group.size() != 0)
    support::fail("{}: {} bytes do not split into {} chunks", op, in.size(), group.size());
  size_t chunk = in.size() / group.size();
  Meeting m{channel(op, group), index_in_group(op, group, device_), op, world_->timeout()};
  size_t n = m.n();
  bool small = in.size() <= HostWorld::kSmallBytes;
  int64_t e = m.open(Kind::AllToAll, in, out.data(), -1, small);
  m.meet();
  bool stream = n * out.size() >= kStreamBytes;
  for (size_t k = 0; k < n; ++k)
    put_bytes(out.data() + k * chunk, (k == m.me ? in.data() : m.input(k, e, small)) + m.me * chunk, chunk, stream);
  if (!small) m.meet();
  count(op, n, in.size(), (n - 1) * chunk, (n - 1) * chunk);
}

void HostCommunicator::broadcast(std::string_view op, const Group& group, std::span<const std::byte> in,
                                 std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  Meeting m{channel(op, group), index_in_group(op, group, device_), op, world_->timeout()};
  size_t n = m.n();
  bool small = in.size() <= HostWorld::kSmallBytes;
  int64_t e = m.open(Kind::Broadcast, in, out.data(), -1, small && m.me == 0);  // only the root is read
  m.meet();
  put_bytes(out.data(), m.me == 0 ? in.data() : m.input(0, e, small), in.size(), n * out.size() >= kStreamBytes);
  if (!small) m.meet();
  count(op, n, in.size(), m.me == 0 ? (n - 1) * in.size() : 0, m.me == 0 ? 0 : in.size());
}

void HostCommunicator::permute(std::string_view op, const Group& group, std::optional<int64_t> source,
                               std::span<const std::byte> in, std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  Meeting m{channel(op, group), index_in_group(op, group, device_), op, world_->timeout()};
  size_t n = m.n();
  int64_t from = source ? static_cast<int64_t>(index_in_group(op, group, *source)) : -1;
  bool small = in.size() <= HostWorld::kSmallBytes;
  int64_t e = m.open(Kind::Permute, in, out.data(), from, small);
  m.meet();
  if (from < 0) {
    std::fill(out.begin(), out.end(), std::byte{0});
  } else {
    auto f = static_cast<size_t>(from);
    put_bytes(out.data(), f == m.me ? in.data() : m.input(f, e, small), in.size(), n * out.size() >= kStreamBytes);
  }
  size_t readers = 0;  // counted before the last meeting, after which peers may reuse their posts
  for (size_t k = 0; k < n; ++k)
    if (k != m.me && m.post(k, e).source == static_cast<int64_t>(m.me)) ++readers;
  if (!small) m.meet();
  bool received = from >= 0 && static_cast<size_t>(from) != m.me;
  count(op, n, in.size(), readers * in.size(), received ? in.size() : 0);
}

void HostCommunicator::barrier(std::string_view op, const Group& group) {
  Meeting m{channel(op, group), index_in_group(op, group, device_), op, world_->timeout()};
  m.open(Kind::Barrier, {}, nullptr, -1, false);
  m.meet();
  count(op, m.n(), 0, 0, 0);
}

}  // namespace tessera::comm
