// The worker pool and the thread budget (threads.h).
//
// Workers wait on their own condition variable for a task, so handing work to an idle worker
// wakes exactly it. Waking a blocked thread costs about 35 µs on these VMs (20-80 µs for a worker
// in a training step), longer than many chunks take, so a thread with nothing to do spins for a
// while first (spin_time): a parallel_chunks caller that has run out of chunks, for its workers'
// last ones (wait_for_chunks; it holds its token, so the spin takes no core the budget gives
// another thread), and an idle worker, for its next task, only while the budget has a token free:
// a core no thread of ours is using. Spinning threads beside busy ones on 2 cores are ruinous
// (DESIGN.md §6), so a worker stops spinning as soon as the budget is full.
// The pool is created on first use and never destroyed: its workers are detached and stay blocked
// at exit, so no static destructor can run while a worker still runs.
#include "support/threads.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/error.h"
#include "support/strings.h"

namespace tessera::support {

namespace {

int64_t default_limit() {
  if (auto n = env_int("TESSERA_THREADS", 1, 4096, "the number of threads Tessera may keep busy, 1 to 4096")) return *n;
  int64_t online = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  int64_t allowed = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : online;
  // The processes of one job on this host (OpenMPI's or MPICH's count; 1 outside mpirun).
  int64_t local = 1;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name); v != nullptr && local == 1) local = parse_int(v).value_or(1);
  return cores_for_process(allowed, online, local);
}

std::atomic<int64_t> limit_override{0};
std::atomic<int64_t> busy{0}, max_busy{0}, shared_jobs{0}, spun_tasks{0};
// Whether this thread holds a token now.
thread_local bool holds_token = false;

void note_busy(int64_t now) {
  int64_t m = max_busy.load(std::memory_order_relaxed);
  while (now > m && !max_busy.compare_exchange_weak(m, now, std::memory_order_relaxed)) {
  }
}

// How long a thread with nothing to do spins before it blocks (TESSERA_SPIN_US, microseconds; 0:
// block at once): a parallel_chunks caller waiting for its workers' last chunks, and a worker
// waiting for its next task while the budget has a core free (the top of the file).
std::chrono::nanoseconds spin_time() {
  static const std::chrono::nanoseconds spin =
      std::chrono::microseconds(env_int("TESSERA_SPIN_US", 0, 100000, "microseconds, 0 to 100000").value_or(200));
  return spin;
}

// How long an idle worker spins on with the budget full before it blocks (Pool::loop).
constexpr auto kFullFor = std::chrono::microseconds(10);

// Spins until done() or for `spin`, whichever comes first.
template <typename Done>
void spin_until(std::chrono::nanoseconds spin, Done&& done) {
  const auto until = std::chrono::steady_clock::now() + spin;
  for (uint32_t n = 1; !done(); ++n) {
    if (n % 64 == 0 && std::chrono::steady_clock::now() >= until) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

void acquire_forced() { note_busy(busy.fetch_add(1) + 1); }

// Takes up to `want` tokens while fewer than the limit are held; returns how many it took.
int64_t try_acquire(int64_t want) {
  int64_t limit = thread_limit(), got = 0;
  int64_t b = busy.load();
  while (got < want && b < limit) {
    if (busy.compare_exchange_weak(b, b + 1)) {
      ++got;
      note_busy(++b);
    }
  }
  return got;
}

void release(int64_t n) { busy.fetch_sub(n); }

// Holds a token for this thread while in scope, unless it already holds one.
class Token {
 public:
  Token() : mine_(!holds_token) {
    if (mine_) {
      acquire_forced();
      holds_token = true;
    }
  }
  ~Token() {
    if (mine_) {
      release(1);
      holds_token = false;
    }
  }
  Token(const Token&) = delete;
  Token& operator=(const Token&) = delete;

 private:
  bool mine_;
};

class Pool {
 public:
  static Pool& get() {
    static Pool* pool = new Pool;  // never destroyed (see the top of the file)
    return *pool;
  }

  // Runs `task` on an idle worker, or on a new one when none is idle, then `then` once the worker
  // is idle again: a caller told by `then` that its tasks are done finds their workers idle, so
  // back-to-back runs reuse the same threads. Throws std::system_error when no thread can be
  // started; neither runs then.
  void dispatch(std::function<void()> task, std::function<void()> then = {}) {
    spin_time();  // read here first, where a bad TESSERA_SPIN_US is the caller's error, not a worker's
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        Worker* w = idle_.back();
        idle_.pop_back();
        w->task = std::move(task);
        w->then = std::move(then);
        w->has_task.store(true, std::memory_order_release);
        w->cv.notify_one();
        return;
      }
    }
    auto w = std::make_unique<Worker>();
    w->task = std::move(task);
    w->then = std::move(then);
    std::thread([this, w = w.get()] { loop(w); }).detach();
    w.release();  // owned by its thread from now on
    std::lock_guard<std::mutex> lock(mu_);
    ++created_;
  }

  int64_t created() {
    std::lock_guard<std::mutex> lock(mu_);
    return created_;
  }

 private:
  struct Worker {
    std::condition_variable cv;
    std::function<void()> task, then;  // set by dispatch, under mu_
    std::atomic<bool> has_task{false};  // set with task: watched by a spinning worker
  };

  void loop(Worker* w) {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      // spin_time() was read by the dispatch that started this worker: it cannot throw here.
      if (const auto spin = spin_time(); !w->task && spin.count() > 0) {
        lock.unlock();
        // The budget full for kFullFor on end: devices fill the cores. (Full for an instant: a
        // caller has taken the token for this very worker and is about to hand it a task.)
        auto full_since = std::chrono::steady_clock::time_point::max();
        spin_until(spin, [&] {
          if (w->has_task.load(std::memory_order_acquire)) return true;
          if (busy.load(std::memory_order_relaxed) < thread_limit()) {
            full_since = std::chrono::steady_clock::time_point::max();
            return false;
          }
          auto now = std::chrono::steady_clock::now();
          full_since = std::min(full_since, now);
          return now - full_since >= kFullFor;
        });
        if (w->has_task.load(std::memory_order_acquire)) spun_tasks.fetch_add(1, std::memory_order_relaxed);
        lock.lock();
      }
      w->cv.wait(lock, [w] { return static_cast<bool>(w->task); });
      w->has_task.store(false, std::memory_order_relaxed);
      std::function<void()> task = std::move(w->task), then = std::move(w->then);
      w->task = nullptr;
      w->then = nullptr;
      lock.unlock();
      task();  // never throws: every task catches what its body throws
      task = nullptr;  // what it captured goes before the worker is handed out again
      lock.lock();
      idle_.push_back(w);
      if (then) {
        lock.unlock();
        then();  // never throws
        then = nullptr;
        lock.lock();
      }
    }
  }

  std::mutex mu_;
  std::vector<Worker*> idle_;
  int64_t created_ = 0;
};

// One parallel_chunks call, shared with its workers (which may start after the call has
// returned: they find no chunk left and never touch the body).
struct Job {
  int64_t count = 0;
  const std::function<void(int64_t)>* body = nullptr;
  // Tokens taken for workers that have not started yet: a worker takes one as it starts; the
  // caller takes back the rest once it has run out of chunks, so a worker woken too late for any
  // chunk does not hold a core from the next kernel.
  std::atomic<int64_t> unstarted{0};
  std::atomic<int64_t> next{0}, done{0};
  std::mutex mu;
  int64_t error_chunk = -1;
  std::exception_ptr error;

  // Runs chunks until none is left. A worker (`worker`) gives its token back as soon as it finds
  // no next chunk, before it reports its last one done: the caller, which returns once every chunk
  // is reported, then finds the token free for its next kernel.
  void work(bool worker) {
    for (int64_t i = next.fetch_add(1); i < count;) {
      try {
        (*body)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (error_chunk < 0 || i < error_chunk) error_chunk = i, error = std::current_exception();
      }
      int64_t after = next.fetch_add(1);
      if (after >= count && worker) give_back_token();
      if (done.fetch_add(1) + 1 == count) done.notify_all();
      i = after;
    }
    if (worker && holds_token) give_back_token();  // no chunk was left for it
  }

  static void give_back_token() {
    release(1);
    holds_token = false;
  }
};

// Returns when every chunk of `job` has run: spinning for `spin` (the top of the file), then
// blocking.
void wait_for_chunks(Job& job, std::chrono::nanoseconds spin) {
  spin_until(spin, [&] { return job.done.load(std::memory_order_acquire) >= job.count; });
  for (int64_t d = job.done.load(); d < job.count; d = job.done.load()) job.done.wait(d);
}

}  // namespace

int64_t cores_for_process(int64_t allowed, int64_t online, int64_t local_processes) {
  // Bound to fewer than all of the CPUs: mpirun gave this process its own (one core per rank is
  // OpenMPI's default for up to 2 ranks). All of them: shared with the host's other ranks.
  if (allowed < online || local_processes <= 1) return std::max<int64_t>(1, allowed);
  return std::max<int64_t>(1, allowed / local_processes);
}

int64_t thread_limit() {
  int64_t o = limit_override.load(std::memory_order_relaxed);
  if (o > 0) return o;
  static const int64_t limit = default_limit();
  return limit;
}

void set_thread_limit(int64_t n) {
  if (n < 0) fail("set_thread_limit: {} threads; expected at least 1 (or 0 for the default)", n);
  limit_override = n;
}

void run_concurrently(size_t count, const std::function<void(size_t)>& body) {
  if (count == 0) return;
  // Up to kInline tasks' errors live in the batch itself: a steady-state run of a few devices
  // allocates nothing here (each task's std::function holds two pointers, inline).
  constexpr size_t kInline = 16;
  struct Batch {
    std::mutex mu;
    std::condition_variable cv;
    size_t left;
    const std::function<void(size_t)>* body;
    std::exception_ptr inline_errors[kInline];
    std::vector<std::exception_ptr> more_errors;
    std::exception_ptr& error(size_t i) { return i < kInline ? inline_errors[i] : more_errors[i - kInline]; }
  } batch;
  batch.left = count;
  batch.body = &body;
  if (count > kInline) batch.more_errors.resize(count - kInline);
  // A thread that waits here is not busy: its token serves the tasks meanwhile. The tasks' tokens
  // are taken before any starts, so that the first to start cannot hand the later ones' cores to
  // its kernels' chunks.
  bool had = holds_token;
  if (had) {
    release(1);
    holds_token = false;
  }
  note_busy(busy.fetch_add(static_cast<int64_t>(count)) + static_cast<int64_t>(count));
  for (size_t i = 0; i < count; ++i) {
    try {
      Pool::get().dispatch(
          [b = &batch, i] {
            holds_token = true;  // taken above
            try {
              (*b->body)(i);
            } catch (...) {
              b->error(i) = std::current_exception();
            }
            release(1);
            holds_token = false;
          },
          [b = &batch] {
            std::lock_guard<std::mutex> lock(b->mu);  // notified under the lock: batch outlives it
            if (--b->left == 0) b->cv.notify_all();
          });
    } catch (...) {
      // No thread for tasks i..count-1: they fail; those started end in bounded time (their
      // waits for the missing ones time out).
      release(static_cast<int64_t>(count - i));
      std::lock_guard<std::mutex> lock(batch.mu);
      for (size_t j = i; j < count; ++j) batch.error(j) = std::current_exception();
      batch.left -= count - i;
      break;
    }
  }
  {
    std::unique_lock<std::mutex> lock(batch.mu);
    batch.cv.wait(lock, [&] { return batch.left == 0; });
  }
  if (had) {
    acquire_forced();
    holds_token = true;
  }
  for (size_t i = 0; i < count; ++i)
    if (batch.error(i)) std::rethrow_exception(batch.error(i));
}

void parallel_chunks(int64_t count, const std::function<void(int64_t)>& body) {
  if (count <= 0) return;
  const auto spin = spin_time();  // before any token is taken: a bad TESSERA_SPIN_US throws here
  Token token;
  int64_t extra = count > 1 ? try_acquire(std::min(count, thread_limit()) - 1) : 0;
  if (extra == 0) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  ++shared_jobs;
  auto job = std::make_shared<Job>();
  job->count = count;
  job->body = &body;
  job->unstarted = extra;
  for (int64_t e = 0; e < extra; ++e) {
    try {
      Pool::get().dispatch([job] {
        // The token the caller took for this worker, unless the caller has taken it back.
        for (int64_t u = job->unstarted.load(); true;) {
          if (u == 0) return;
          if (job->unstarted.compare_exchange_weak(u, u - 1)) break;
        }
        holds_token = true;
        job->work(true);
      });
    } catch (...) {
      release(job->unstarted.exchange(0));  // no thread: the caller does the work
      break;
    }
  }
  job->work(false);
  release(job->unstarted.exchange(0));
  wait_for_chunks(*job, spin);
  // The error leaves the job before it is thrown: a late worker may still hold the job and free
  // it, and must not be the one to drop the exception's last reference while the caller reads it
  // (libsupc++'s reference count is invisible to ThreadSanitizer).
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    error = std::move(job->error);
    job->error = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

int64_t available_threads() {
  int64_t mine = holds_token ? 1 : 0;  // a caller without a token takes one when it runs
  return std::max<int64_t>(1, thread_limit() - busy.load(std::memory_order_relaxed) + mine);
}

ThreadStats thread_stats() {
  return {Pool::get().created(), busy.load(), max_busy.load(), shared_jobs.load(), spun_tasks.load()};
}

void reset_max_busy() { max_busy = busy.load(); }

}  // namespace tessera::support
