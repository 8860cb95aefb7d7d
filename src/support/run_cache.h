// RunCache: what kernels keep from one run of a program to the next (contraction plans, fused
// loops' workspaces, collectives' groups, copy buffers), so that a steady-state run allocates
// nothing (tests/exec/allocation_test.cpp). It is owned by whoever runs a program again and again
// (exec::RunContext: one per device and program, used by one run at a time) and reached through
// the thread that runs it: a Scope makes it current for the run. A device's runs may land on any
// worker thread (support/threads.h), so a cache per thread would warm up again on each new one;
// a cache per run context is warm from its second run on, on whatever thread.
//
// Kernels ask run_local<T>(): the current run's entry of type T, or, on a thread with no current
// run (a worker running another thread's chunks, a direct Executable::run), the thread's own.
// Entries are keyed by type; each is made on first use and lives as long as its cache.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace tessera::support {

class RunCache {
 public:
  RunCache() = default;
  RunCache(const RunCache&) = delete;
  RunCache& operator=(const RunCache&) = delete;

  // The cache of the run on this thread; null when none.
  static RunCache* current() { return current_ref(); }

  // Makes a cache current on this thread while it lives (restoring the one before).
  class Scope {
   public:
    explicit Scope(RunCache& c) : saved_(current_ref()) { current_ref() = &c; }
    ~Scope() { current_ref() = saved_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RunCache* saved_;
  };

  template <typename T>
  T& get() {
    const void* key = &tag<T>;
    for (auto& [k, v] : entries_)
      if (k == key) return *static_cast<T*>(v.get());
    entries_.emplace_back(key, Entry(new T(), [](void* p) { delete static_cast<T*>(p); }));
    return *static_cast<T*>(entries_.back().second.get());
  }

 private:
  using Entry = std::unique_ptr<void, void (*)(void*)>;
  template <typename T>
  static inline const char tag = 0;  // one address per type
  static RunCache*& current_ref() {
    thread_local RunCache* c = nullptr;
    return c;
  }
  std::vector<std::pair<const void*, Entry>> entries_;
};

// A kernel's scratch kept in the run's cache (as an entry's member, or as the entry itself through
// a type of its own): it only grows, so a steady-state run allocates nothing for it, and it is not
// zero-filled (its user writes what it reads).
template <typename T>
class GrowingBuffer {
 public:
  // At least n elements, the old ones kept only when no larger buffer was needed.
  T* reserve(int64_t n) {
    if (size_ < n) {
      data_.reset();  // the old buffer goes first: its memory may serve the new one
      data_.reset(new T[static_cast<size_t>(n)]);
      size_ = n;
    }
    return data_.get();
  }
  T* data() const { return data_.get(); }
  int64_t size() const { return size_; }

 private:
  std::unique_ptr<T[]> data_;
  int64_t size_ = 0;
};

// The current run's entry of type T, else this thread's own.
template <typename T>
T& run_local() {
  if (RunCache* c = RunCache::current()) return c->get<T>();
  thread_local T mine;
  return mine;
}

}  // namespace tessera::support
