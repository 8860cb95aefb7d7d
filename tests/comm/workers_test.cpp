// Persistent device workers and the thread budget (support/threads.h) under run_parallel: the same
// worker threads serve every run; a device's error and a collective's timeout still reach the
// caller, in bounded time, and the workers serve the next run after them; parallel_chunks never
// keeps more threads busy than the limit while the devices alone do not exceed it, and does use
// the free ones.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "comm/parallel.h"
#include "ir/builder.h"
#include "support/error.h"
#include "support/threads.h"

namespace tessera::comm {
namespace {

using namespace tessera::ir;

// @f<n>: all_reduce of f32[4] over devices 0..n-1 (so the n devices of a run are all alive at
// once); @g: x + x; @reduce: all_reduce over devices {0, 1}; @skip: returns its input.
Module programs() {
  Module m;
  for (int64_t n : {2, 3, 4})
    build_function(m, fmt::format("f{}", n), [n](FunctionBuilder& b) {
      std::vector<int64_t> all(static_cast<size_t>(n));
      for (int64_t d = 0; d < n; ++d) all[static_cast<size_t>(d)] = d;
      return all_reduce(b.param(f32({4})), {all});
    });
  build_function(m, "g", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({4}));
    return x + x;
  });
  build_function(m, "reduce", [](FunctionBuilder& b) { return all_reduce(b.param(f32({2})), {{0, 1}}); });
  build_function(m, "skip", [](FunctionBuilder& b) { return b.param(f32({2})); });
  return m;
}

// Waits (up to 2 s) until no worker holds a token: a kernel's helper that ran its last chunk may
// still be on its way out when the kernel returns.
int64_t settled_busy() {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (support::thread_stats().busy != 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  return support::thread_stats().busy;
}

// Runs @f<n> on `n` devices; returns the thread each device ran on.
std::vector<std::thread::id> run_f(const Module& m, int64_t n, std::mutex& mu) {
  std::vector<std::thread::id> ids(static_cast<size_t>(n));
  ParallelOptions o;
  o.evaluate = [&](int64_t process, const ir::Function& fn, std::vector<Literal> args, const interp::Options& options) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids[static_cast<size_t>(process)] = std::this_thread::get_id();
    }
    return interp::evaluate(fn, std::move(args), options);
  };
  std::vector<Literal> in;
  for (int64_t d = 0; d < n; ++d) in.push_back(Literal::from_doubles(f32({4}), std::vector<double>{1, 2, 3, double(d)}));
  std::string fn = fmt::format("f{}", n);
  std::vector<Literal> out = run_parallel(m, {std::vector<std::string>(static_cast<size_t>(n), fn)}, in, o);
  for (int64_t d = 0; d < n; ++d) EXPECT_EQ(out[static_cast<size_t>(d)].get_double(3), double(n * (n - 1) / 2));
  return ids;
}

TEST(Workers, EveryRunReusesTheSameThreads) {
  Module m = programs();
  std::mutex mu;
  run_f(m, 4, mu);
  int64_t created = support::thread_stats().workers;
  EXPECT_GE(created, 4);
  std::set<std::thread::id> seen;
  for (int run = 0; run < 20; ++run) {
    int64_t n = run % 2 == 0 ? 4 : 2;
    std::vector<std::thread::id> ids = run_f(m, n, mu);
    std::set<std::thread::id> distinct(ids.begin(), ids.end());
    EXPECT_EQ(distinct.size(), static_cast<size_t>(n)) << "run " << run << ": one thread per device";
    EXPECT_EQ(distinct.count(std::this_thread::get_id()), 0u);
    seen.insert(ids.begin(), ids.end());
    EXPECT_EQ(support::thread_stats().workers, created) << "run " << run << " started a thread";
  }
  EXPECT_LE(seen.size(), static_cast<size_t>(created));
  EXPECT_EQ(settled_busy(), 0);  // every token given back
}

TEST(Workers, ADevicesErrorReachesTheCallerAndTheWorkersServeTheNextRun) {
  Module m = programs();
  std::mutex mu;
  run_f(m, 3, mu);
  int64_t created = support::thread_stats().workers;
  ParallelOptions o;
  o.evaluate = [](int64_t process, const ir::Function& fn, std::vector<Literal> args, const interp::Options& options) {
    if (process == 1) support::fail("device {} refuses", process);
    return interp::evaluate(fn, std::move(args), options);
  };
  std::vector<Literal> in(3, Literal::from_doubles(f32({4}), std::vector<double>{1, 2, 3, 4}));
  try {
    run_parallel(m, {{"g", "g", "g"}}, in, o);
    FAIL() << "the failing device's error did not reach the caller";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()), "run_parallel: process 1 (@g): device 1 refuses");
  }
  run_f(m, 3, mu);
  EXPECT_EQ(support::thread_stats().workers, created);
  EXPECT_EQ(settled_busy(), 0);
}

TEST(Workers, ACollectiveThatNeverMeetsTimesOutAndTheWorkersServeTheNextRun) {
  Module m = programs();
  std::mutex mu;
  run_f(m, 2, mu);
  int64_t created = support::thread_stats().workers;
  for (int round = 0; round < 2; ++round) {
    ParallelOptions o;
    o.timeout = std::chrono::milliseconds(200);
    std::vector<Literal> in(2, Literal::from_doubles(f32({2}), std::vector<double>{1, 2}));
    auto start = std::chrono::steady_clock::now();
    try {
      run_parallel(m, {{"reduce"}, {"skip"}}, in, o);
      FAIL() << "process 0 waited for a peer that never came, without an error";
    } catch (const support::UserError& e) {
      EXPECT_EQ(std::string(e.what()),
                "run_parallel: process 0 (@reduce): stablehlo.all_reduce on device 0 timed out after 200 ms waiting "
                "for device 1 (group [0, 1])");
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
  run_f(m, 2, mu);
  EXPECT_EQ(support::thread_stats().workers, created);
}

// Waits until `count` has reached `n` (every party has arrived), for at most 10 s: on a loaded
// machine one device or pool thread may otherwise finish before the other is scheduled at all,
// and the test would measure the scheduler rather than the thread budget.
void wait_for(std::atomic<int64_t>& count, int64_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (count.load() < n && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

// Two devices, each running kernels of 12 chunks that take a while, under a limit of `limit`:
// returns the most chunks seen running at once. The devices start their kernels together.
int64_t chunks_at_once(int64_t limit) {
  support::set_thread_limit(limit);
  support::reset_max_busy();
  std::atomic<int64_t> running{0}, most{0}, arrived{0};
  support::run_concurrently(2, [&](size_t) {
    ++arrived;
    wait_for(arrived, 2);
    for (int kernel = 0; kernel < 3; ++kernel)
      support::parallel_chunks(12, [&](int64_t) {
        int64_t now = ++running;
        for (int64_t m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        --running;
      });
  });
  support::set_thread_limit(0);
  return most.load();
}

TEST(Workers, KernelsUseOnlyTheCoresTheDevicesLeaveFree) {
  // Two devices on two cores: no kernel gets a second thread.
  int64_t jobs = support::thread_stats().shared_jobs;
  EXPECT_LE(chunks_at_once(2), 2);
  EXPECT_EQ(support::thread_stats().max_busy, 2);
  EXPECT_EQ(support::thread_stats().shared_jobs, jobs);
  // Two devices on four cores: kernels share the two free ones, never more.
  EXPECT_LE(chunks_at_once(4), 4);
  EXPECT_LE(support::thread_stats().max_busy, 4);
  EXPECT_GT(support::thread_stats().shared_jobs, jobs);
  EXPECT_EQ(settled_busy(), 0);
}

TEST(Workers, OneDeviceOnTwoCoresRunsItsChunksOnBoth) {
  support::set_thread_limit(2);
  support::reset_max_busy();
  std::atomic<int64_t> running{0}, most{0}, seen{0};
  std::mutex mu;
  std::set<std::thread::id> threads;
  support::run_concurrently(1, [&](size_t) {
    support::parallel_chunks(16, [&](int64_t) {
      int64_t now = ++running;
      for (int64_t m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        if (threads.insert(std::this_thread::get_id()).second) ++seen;
      }
      // The first chunks hold their thread until a second thread has taken one (or 10 s pass):
      // a pool that never lends the free core fails, whatever the machine's load.
      wait_for(seen, 2);
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      --running;
    });
  });
  support::set_thread_limit(0);
  EXPECT_EQ(support::thread_stats().max_busy, 2);
  EXPECT_LE(most.load(), 2);
  EXPECT_EQ(threads.size(), 2u);
}

// An idle worker spins for its next task while the budget has a core free: of back-to-back
// kernels on one device with two cores, some reach a worker that is still spinning, where a
// blocked one would have to be woken (20-80 µs on these VMs). Kernels run until one has (at most
// 2 s, for a loaded machine): a call can also find the last call's worker still holding its token
// and run alone, and which thread takes which chunk is not fixed.
TEST(Workers, AnIdleWorkerTakesTheNextKernelsChunksWithoutBeingWoken) {
  support::set_thread_limit(2);
  int64_t spun = support::thread_stats().spun_tasks;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (support::thread_stats().spun_tasks == spun && std::chrono::steady_clock::now() < until) {
    support::parallel_chunks(2, [](int64_t) {
      const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
      while (std::chrono::steady_clock::now() < end) {
      }
    });
  }
  support::set_thread_limit(0);
  EXPECT_GT(support::thread_stats().spun_tasks, spun) << "every task went to a blocked worker";
}

TEST(Workers, AChunksExceptionReachesTheCallerAfterEveryChunkHasEnded) {
  support::set_thread_limit(3);
  std::atomic<int64_t> ended{0};
  try {
    support::parallel_chunks(9, [&](int64_t i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++ended;
      if (i == 4 || i == 7) support::fail("chunk {} failed", i);
    });
    FAIL() << "no exception";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()), "chunk 4 failed");
  }
  EXPECT_EQ(ended.load(), 9);
  support::set_thread_limit(0);
  EXPECT_EQ(settled_busy(), 0);
}

TEST(Workers, TheLimitComesFromTheMachineOrIsSet) {
  EXPECT_GE(support::thread_limit(), 1);
  support::set_thread_limit(7);
  EXPECT_EQ(support::thread_limit(), 7);
  support::set_thread_limit(0);
  EXPECT_THROW(support::set_thread_limit(-1), support::UserError);
}

// Ranks of one job on a host: bound to cores of their own (OpenMPI's default for up to 2 ranks),
// each keeps its cores; unbound (more ranks than cores, or --bind-to none), they share the host's.
TEST(Workers, RanksOnOneHostShareItsCores) {
  EXPECT_EQ(support::cores_for_process(2, 2, 1), 2);  // no mpirun
  EXPECT_EQ(support::cores_for_process(1, 2, 2), 1);  // np 2, bound to a core each
  EXPECT_EQ(support::cores_for_process(2, 2, 2), 1);  // np 2, unbound
  EXPECT_EQ(support::cores_for_process(2, 2, 4), 1);  // np 4 on 2 cores: at least 1
  EXPECT_EQ(support::cores_for_process(16, 16, 4), 4);
  EXPECT_EQ(support::cores_for_process(4, 16, 4), 4);  // bound to 4 of 16
}

}  // namespace
}  // namespace tessera::comm
