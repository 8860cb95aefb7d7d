// The MPI thread of this process (see mpi_process.h): initialization, the progress loop, the
// mailbox, fault notices, the SIGTERM report and leaving.
#include "comm/mpi_process.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstring>
#include <ctime>

#include "comm/mpi_collectives.h"
#include "comm/mpi_internal.h"
#include "comm/mpi_wire.h"
#include "support/strings.h"

namespace tessera::comm {
namespace {

using namespace std::chrono_literals;

// Our own communicator (a duplicate of MPI_COMM_WORLD), so code that calls MPI itself through
// call() cannot receive our messages, nor we theirs.
MPI_Comm g_comm = MPI_COMM_NULL;
// The parent of the per-group communicators (creation_comm()).
MPI_Comm g_create = MPI_COMM_NULL;

enum Tag : int { kData = 1, kFail = 2, kBye = 3 };

// What the SIGTERM handler prints: two buffers, written alternately under the process mutex and
// published by index, so the handler (which takes no lock) reads a complete one.
char g_report[2][1024];
size_t g_report_size[2];
std::atomic<int> g_report_index{0};

extern "C" void on_sigterm(int sig) {
  int i = g_report_index.load();
  [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, g_report[i], g_report_size[i]);
  // mpirun's daemon forwards our stderr only while we live: give it time to read the line (it
  // sends SIGKILL 1 s after SIGTERM anyway).
  struct timespec pause {0, 300'000'000};
  nanosleep(&pause, nullptr);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_sigterm_report() {
  struct sigaction old {};
  sigaction(SIGTERM, nullptr, &old);
  if (old.sa_handler != SIG_DFL) return;  // someone else handles SIGTERM; leave it to them
  struct sigaction sa {};
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

MPI_Comm creation_comm() { return g_create; }

struct MpiProcess::InFlight {
  MPI_Request request = MPI_REQUEST_NULL;
  std::shared_ptr<const std::vector<std::byte>> data;
};

MpiProcess& MpiProcess::get() {
  static MpiProcess process;
  return process;
}

MpiProcess::MpiProcess() {
  thread_ = std::thread([this] { main(); });
  std::unique_lock lock(mu_);
  arrived_.wait(lock, [&] { return started_; });
  if (!init_error_.empty()) {
    lock.unlock();
    thread_.join();
    throw support::UserError(init_error_);
  }
}

MpiProcess::~MpiProcess() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MpiProcess::set_waiting(const std::string& text) {
  int next = 1 - g_report_index.load();
  std::string line = text.substr(0, sizeof g_report[0] - 1) + "\n";
  std::memcpy(g_report[next], line.data(), line.size());
  g_report_size[next] = line.size();
  g_report_index.store(next);
}

void MpiProcess::main() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    // Someone else started MPI: we may call it from this thread only if they allowed any thread.
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    own_mpi_ = false;
    if (level < MPI_THREAD_MULTIPLE) {
      std::lock_guard lock(mu_);
      init_error_ = "MPI was initialized before Tessera's MPI backend without MPI_THREAD_MULTIPLE; "
                    "let Tessera initialize it, or initialize it with MPI_THREAD_MULTIPLE";
      started_ = true;
      arrived_.notify_all();
      return;
    }
  } else {
    // Group leaders call MPI's collectives from their device threads (mpi_collectives.h).
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
      std::lock_guard lock(mu_);
      init_error_ = "this MPI does not provide MPI_THREAD_MULTIPLE, which Tessera's MPI backend needs "
                    "(OpenMPI built with thread support does)";
      started_ = true;
      arrived_.notify_all();
      return;
    }
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_create);
  MPI_Comm_rank(g_comm, &rank_);
  MPI_Comm_size(g_comm, &size_);
  install_sigterm_report();
  {
    std::lock_guard lock(mu_);
    set_waiting(fmt::format("tessera: rank {} stopped by SIGTERM outside any collective", rank_));
    started_ = true;
  }
  arrived_.notify_all();
  try {
    while (true) {
      bool moved = progress();
      std::unique_lock lock(mu_);
      if (stop_ && outbox_.empty() && calls_.empty()) break;
      // Poll often while a device thread waits on MPI; otherwise just often enough to keep large
      // transfers moving and notices arriving (DESIGN.md §6: no spinning on 2 cores).
      if (!moved)
        wake_.wait_for(lock, waiting_ > 0 ? std::chrono::microseconds(50) : std::chrono::microseconds(2000),
                       [&] { return stop_ || !outbox_.empty() || !calls_.empty(); });
    }
    leave();
  } catch (const std::exception& e) {
    fmt::print(stderr, "tessera: rank {}: the MPI thread failed: {}; aborting the MPI job\n", rank_, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

bool MpiProcess::progress() {
  std::deque<Outgoing> out;
  std::deque<std::packaged_task<void()>> calls;
  {
    std::lock_guard lock(mu_);
    out.swap(outbox_);
    calls.swap(calls_);
  }
  bool moved = !out.empty() || !calls.empty();
  for (Outgoing& o : out) {
    auto f = std::make_unique<InFlight>();
    f->data = std::move(o.data);
    MPI_Isend(f->data->data(), static_cast<int>(f->data->size()), MPI_BYTE, o.dest, o.tag, g_comm, &f->request);
    in_flight_.push_back(std::move(f));
  }
  for (auto& c : calls) c();
  std::erase_if(in_flight_, [&](const std::unique_ptr<InFlight>& f) {
    int done = 0;
    MPI_Test(&f->request, &done, MPI_STATUS_IGNORE);
    if (done) moved = true;
    return done != 0;
  });
  while (true) {
    int flag = 0;
    MPI_Message message;
    MPI_Status status;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_comm, &flag, &message, &status);
    if (!flag) break;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::vector<std::byte> buffer(static_cast<size_t>(count));
    MPI_Mrecv(buffer.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
    deliver(status.MPI_SOURCE, status.MPI_TAG, std::move(buffer));
    moved = true;
  }
  return moved;
}

void MpiProcess::deliver(int source, int tag, std::vector<std::byte> message) {
  std::lock_guard lock(mu_);
  wire::Reader in(message);
  if (tag == kData) {
    Key key;
    key.world = in.get<uint64_t>();
    key.sequence = in.get<int64_t>();
    key.group.resize(in.get<uint32_t>());
    for (int64_t& d : key.group) d = in.get<int64_t>();
    std::string op = in.get_string();
    size_t header = message.size() - in.rest().size();
    message.erase(message.begin(), message.begin() + static_cast<long>(header));
    mailbox_[key][source] = Message{std::move(op), std::move(message)};
  } else if (tag == kFail) {
    uint64_t world = in.get<uint64_t>();
    failed_[world].emplace(source, in.get_string());  // the first reason is the cause
  } else if (tag == kBye) {
    departed_.insert(source);
  } else {
    TESSERA_CHECK(false, "rank {} received a message with unknown tag {} from rank {}", rank_, tag, source);
  }
  arrived_.notify_all();
}

void MpiProcess::send(const Key& key, std::string_view op, const std::vector<int>& ranks,
                      std::vector<std::byte> payload) {
  std::vector<std::byte> message;
  wire::put<uint64_t>(message, key.world);
  wire::put<int64_t>(message, key.sequence);
  wire::put<uint32_t>(message, static_cast<uint32_t>(key.group.size()));
  for (int64_t d : key.group) wire::put<int64_t>(message, d);
  wire::put_string(message, op);
  if (message.size() + payload.size() > static_cast<size_t>(INT_MAX))
    support::fail("{}: {} bytes in one MPI message; the MPI backend sends at most {} bytes per rank and collective",
                  op, message.size() + payload.size(), INT_MAX);
  message.insert(message.end(), payload.begin(), payload.end());
  auto data = std::make_shared<const std::vector<std::byte>>(std::move(message));
  {
    std::lock_guard lock(mu_);
    for (int r : ranks) outbox_.push_back({r, kData, data});
    // Counted when queued, so the count is complete when the call that sent it returns.
    mpi::count_sent(static_cast<int64_t>(data->size() * ranks.size()));
  }
  wake_.notify_one();
}

MpiProcess::Outcome MpiProcess::receive(const Key& key, std::string_view op, const std::vector<int>& ranks,
                                        std::chrono::steady_clock::time_point deadline,
                                        const std::function<std::string(const std::vector<int>&)>& waiting) {
  std::unique_lock lock(mu_);
  ++waiting_;
  wake_.notify_one();
  auto finish = [&](Outcome o) {
    if (--waiting_ == 0)
      set_waiting(fmt::format("tessera: rank {} stopped by SIGTERM outside any collective", rank_));
    return o;
  };
  while (true) {
    Outcome o;
    auto box = mailbox_.find(key);
    for (int r : ranks) {
      const Message* m = nullptr;
      if (box != mailbox_.end())
        if (auto it = box->second.find(r); it != box->second.end()) m = &it->second;
      if (!m) {
        o.missing.push_back(r);
      } else if (m->op != op) {
        o.kind = Outcome::Mismatch;
        o.peer = r;
        o.detail = m->op;
        return finish(std::move(o));
      }
    }
    if (o.missing.empty()) {
      if (box != mailbox_.end()) {  // (none when there is no other rank to hear from)
        for (int r : ranks) o.payloads.push_back(std::move(box->second.at(r).payload));
        mailbox_.erase(box);
      }
      return finish(std::move(o));
    }
    for (int r : o.missing) {
      if (const std::string* reason = failure(key.world, r)) {
        o.kind = Outcome::PeerFailed;
        o.peer = r;
        o.detail = *reason;
        return finish(std::move(o));
      }
      if (departed_.count(r)) {
        o.kind = Outcome::PeerLeft;
        o.peer = r;
        return finish(std::move(o));
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      o.kind = Outcome::Timeout;
      return finish(std::move(o));
    }
    set_waiting(waiting(o.missing));
    arrived_.wait_until(lock, deadline);
  }
}

std::optional<std::pair<int, std::string>> MpiProcess::peer_trouble(uint64_t world, const std::vector<int>& ranks) {
  std::lock_guard lock(mu_);
  for (int r : ranks) {
    if (const std::string* reason = failure(world, r))
      return std::pair{r, fmt::format("rank {} failed: {}", r, *reason)};
    if (departed_.count(r)) return std::pair{r, fmt::format("rank {} exited without joining it", r)};
  }
  return std::nullopt;
}

void MpiProcess::report_waiting(const std::string& text) {
  std::lock_guard lock(mu_);
  set_waiting(text.empty() ? fmt::format("tessera: rank {} stopped by SIGTERM outside any collective", rank_) : text);
}

void MpiProcess::notify_failure(uint64_t world, const std::string& reason) {
  std::vector<std::byte> message;
  wire::put<uint64_t>(message, world);
  wire::put_string(message, reason);
  auto data = std::make_shared<const std::vector<std::byte>>(std::move(message));
  {
    std::lock_guard lock(mu_);
    for (int r = 0; r < size_; ++r)
      if (r != rank_) {
        outbox_.push_back({r, kFail, data});
        mpi::count_sent(static_cast<int64_t>(data->size()));
      }
  }
  wake_.notify_one();
}

void MpiProcess::forget(uint64_t world) {
  std::lock_guard lock(mu_);
  std::erase_if(mailbox_, [&](const auto& entry) { return entry.first.world == world; });
  failed_.erase(world);
  parent_.erase(world);
}

uint64_t MpiProcess::next_world_id(int first, int count) {
  std::lock_guard lock(mu_);
  // Top bit set: never one of next_world_'s ids; then the range, then the range's own counter.
  uint64_t n = range_worlds_[{first, count}]++;
  TESSERA_CHECK(first >= 0 && first < (1 << 15) && count > 0 && count < (1 << 15) && n < (uint64_t{1} << 32),
                "world id of ranks {}+{} (world {}) out of range", first, count, n);
  return (uint64_t{1} << 63) | (static_cast<uint64_t>(first) << 47) | (static_cast<uint64_t>(count) << 32) | n;
}

void MpiProcess::link_failures(uint64_t world, uint64_t parent) {
  std::lock_guard lock(mu_);
  parent_[world] = parent;
}

const std::string* MpiProcess::failure(uint64_t world, int rank) const {
  for (int hop = 0; hop < 2; ++hop) {
    if (auto it = failed_.find(world); it != failed_.end())
      if (auto r = it->second.find(rank); r != it->second.end()) return &r->second;
    auto up = parent_.find(world);
    if (up == parent_.end()) return nullptr;
    world = up->second;
  }
  return nullptr;
}

void MpiProcess::call(std::function<void()> fn) {
  TESSERA_CHECK(std::this_thread::get_id() != thread_.get_id(), "MpiProcess::call from the MPI thread itself");
  std::packaged_task<void()> task(std::move(fn));
  std::future<void> done = task.get_future();
  {
    std::lock_guard lock(mu_);
    calls_.push_back(std::move(task));
  }
  wake_.notify_one();
  done.get();
}

void MpiProcess::extend_exit_timeout(std::chrono::milliseconds t) {
  std::lock_guard lock(mu_);
  exit_timeout_ = std::max(exit_timeout_, t);
}

// Every rank says BYE and waits for everyone else's, receiving (and dropping) whatever still
// arrives, so every send completes and MPI_Finalize finds no rank still expecting us. A rank that
// waits for us in a collective sees our BYE and fails naming us, so it leaves too.
void MpiProcess::leave() {
  auto bye = std::make_shared<const std::vector<std::byte>>();
  std::chrono::milliseconds timeout;
  {
    std::lock_guard lock(mu_);
    for (int r = 0; r < size_; ++r)
      if (r != rank_) {
        outbox_.push_back({r, kBye, bye});
        mpi::count_sent(static_cast<int64_t>(bye->size()));
      }
    timeout = exit_timeout_;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    bool moved = progress();
    std::vector<int> absent;
    {
      std::lock_guard lock(mu_);
      for (int r = 0; r < size_; ++r)
        if (r != rank_ && !departed_.count(r)) absent.push_back(r);
      set_waiting(absent.empty()
                      ? fmt::format("tessera: rank {} stopped by SIGTERM while leaving, finishing its sends", rank_)
                      : fmt::format("tessera: rank {} stopped by SIGTERM while leaving, waiting for rank{} {} to leave",
                                    rank_, absent.size() == 1 ? "" : "s", support::join(absent, ", ")));
    }
    if (absent.empty() && in_flight_.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      fmt::print(stderr,
                 "tessera: rank {} is leaving, but rank{} {} did not leave within {} s; aborting the MPI job\n",
                 rank_, absent.size() == 1 ? "" : "s", support::join(absent, ", "), timeout.count() / 1000);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!moved) std::this_thread::sleep_for(1ms);
  }
  MPI_Comm_free(&g_comm);
  MPI_Comm_free(&g_create);
  if (own_mpi_) MPI_Finalize();
}

}  // namespace tessera::comm
