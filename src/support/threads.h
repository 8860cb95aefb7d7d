// The process's threads: one pool of persistent workers, and a budget of busy threads.
//
// Host devices, pipeline stages and MPI-rank devices are long-lived workers: run_concurrently hands
// each of its tasks to a worker thread of its own (an idle one, or a new one when none is idle;
// workers never exit), so a run costs a wake-up per device, not a thread start, and the same
// threads serve every run. No task waits for a thread: each is handed out at once (to an idle
// worker, which may be one whose task of the same call has already ended), so tasks that wait for
// each other (collectives) all run; each such wait ends in bounded time (the communicators'
// timeouts), so every call returns in bounded time.
//
// The budget (DESIGN.md §6: more busy threads than cores is ruinous): a thread running Tessera's
// work holds one of thread_limit() tokens. A worker holds one while it runs a task (taken even over
// the limit: devices must all run); a thread blocked in run_concurrently gives its token back while
// it waits. parallel_chunks spreads a kernel's chunks over the calling thread and as many workers
// as there are free tokens, so a device uses the cores that other devices leave idle, and the
// number of busy threads never exceeds the limit when the devices alone do not. The limit is the
// CPUs this process may run on (sched_getaffinity), or TESSERA_THREADS from the environment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace tessera::support {

// How many threads may be busy at once: TESSERA_THREADS, or cores_for_process of this process's
// CPUs, the machine's and the count of processes mpirun started on this host.
int64_t thread_limit();
// The cores a process may keep busy: the CPUs it is `allowed` (its affinity), unless those are all
// `online` CPUs and `local_processes` ranks of one job share them, each then taking its share
// (at least 1). Spinning or chunked threads of several ranks on the same cores would be
// oversubscription (DESIGN.md §6).
int64_t cores_for_process(int64_t allowed, int64_t online, int64_t local_processes);
// Sets the limit for this process (tests, the command line); 0 restores the default.
void set_thread_limit(int64_t n);

// Runs body(0) ... body(count - 1) at once, each on a worker thread (never the caller's), and
// returns when all have returned and their workers are idle again; then rethrows the exception of
// the lowest-numbered task that threw, if any.
void run_concurrently(size_t count, const std::function<void(size_t)>& body);

// Runs body(0) ... body(count - 1) (independent chunks of one kernel) on the calling thread and on
// up to min(count, free tokens) - 1 workers; returns when all have returned, rethrowing the first
// exception (by chunk index). Which thread runs which chunk is not fixed: a chunk's result must
// not depend on it.
void parallel_chunks(int64_t count, const std::function<void(int64_t)>& body);

// How many threads a parallel_chunks call made now could use (1 + free tokens, at least 1); a
// hint for sizing chunks, since other threads take and return tokens concurrently.
int64_t available_threads();

struct ThreadStats {
  int64_t workers = 0;      // worker threads created so far (they are reused, never ended)
  int64_t busy = 0;         // tokens held now
  int64_t max_busy = 0;     // the most tokens held at once since the last reset
  int64_t shared_jobs = 0;  // parallel_chunks calls that got at least one worker
  int64_t spun_tasks = 0;   // tasks a worker took while spinning for them (not woken: threads.cpp)
};
ThreadStats thread_stats();
void reset_max_busy();  // max_busy := busy

}  // namespace tessera::support
