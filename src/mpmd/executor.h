// The MPMD executor: runs a FragmentPlan (fragments.h) on its meshes and returns the whole step's
// results — the same numbers as the unsplit program.
//
// Each mesh has one thread that runs the mesh's fragments in program order (a topological order of
// the plan, so a mesh never waits on itself), and a store of the values its later fragments read.
// Meshes run concurrently: a fragment waits only for the transfers it reads. A transfer is a
// point-to-point copy posted by the producing mesh's thread into the receiving mesh's mailbox right
// after the producing fragment; posting never waits, receiving waits up to a timeout. A mesh with an
// spmd mesh runs its fragments on a runtime::Session of its own host devices (propagated and
// partitioned by their shardings, whole arrays in and out); a one-device mesh runs them with the
// interpreter and the fast kernels.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/literal.h"
#include "mpmd/fragments.h"

namespace tessera::mpmd {

struct ExecutorOptions {
  std::chrono::milliseconds transfer_timeout = std::chrono::seconds(60);
  bool fast_kernels = true;
};

struct ExecutionStats {
  struct Span {
    size_t fragment = 0;
    double start_ms = 0, end_ms = 0;  // since the run started
  };
  std::vector<Span> spans;                 // one per fragment, in order of the plan
  int64_t transferred_bytes = 0;
  std::vector<int64_t> peak_store_bytes;   // per mesh: values kept for its later fragments
};

class Executor {
 public:
  // Compiles every fragment for its mesh (once; run may be called many times).
  explicit Executor(const FragmentPlan& plan, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // `parameters` are the whole step's, in its order (values for parameters no fragment reads are
  // checked for type only). A fragment's failure stops every mesh and is rethrown, naming the
  // fragment; a transfer that never arrives names the value, both meshes and both fragments.
  std::vector<ir::Literal> run(const std::vector<ir::Literal>& parameters);
  const ExecutionStats& stats() const { return stats_; }
  // The number of devices fragment `f` runs on (1: the interpreter, on a one-device mesh; a
  // fragment without shardings on a mesh of several devices is replicated over them).
  int64_t devices_of(size_t f) const;

 private:
  struct Impl;
  const FragmentPlan& plan_;
  ExecutorOptions options_;
  std::unique_ptr<Impl> impl_;
  ExecutionStats stats_;
};

}  // namespace tessera::mpmd
