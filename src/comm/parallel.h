// interpreter.run_parallel for real: a grid of programs (num_replicas x num_partitions) run
// concurrently, one host-device thread per process (a persistent worker of support/threads.h,
// reused by every run), their collectives exchanging data through a HostWorld. A process that
// waits too long for its peers ends with a TimeoutError, so a program that deadlocks fails in
// bounded time and every process has ended when the call returns.
//
// A ParallelRun is that grid's state made once and run many times: the world, each process's
// communicator (its channels found once), collectives and options. run_parallel makes one per
// call; runtime::ShardedProgram keeps one from step to step, so that a steady-state step
// allocates nothing here.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/accounting.h"
#include "interp/interpreter.h"

namespace tessera::comm {

// Runs process (or device) `process`'s program `fn` on `args` with `options` (its collectives,
// process and module filled in) and returns the results. runtime::Session passes one that runs the
// executables it compiled once per program and device; without one, interp::evaluate runs.
using Evaluator = std::function<std::vector<ir::Literal>(int64_t process, const ir::Function& fn,
                                                         std::vector<ir::Literal> args,
                                                         const interp::Options& options)>;

struct ParallelOptions {
  std::chrono::milliseconds timeout = std::chrono::seconds(30);
  interp::Options base;  // hooks shared by every process (checks, nested run_parallel)
  Traffic* traffic = nullptr;  // when set: process i's collectives count their bytes in device(i)
  Evaluator evaluate;          // null: interp::evaluate
};

class HostWorld;
class HostCommunicator;
class CommCollectives;

class ParallelRun {
 public:
  // Process i (replica i / partitions, partition i % partitions) runs functions[i] of `module`;
  // `base`'s hooks are shared by every process, `traffic` (when set) counts process i's bytes in
  // its device(i).
  ParallelRun(const ir::Module& module, std::vector<const ir::Function*> functions, uint32_t partitions,
              std::chrono::milliseconds timeout, const interp::Options& base, Traffic* traffic = nullptr);
  ~ParallelRun();
  ParallelRun(const ParallelRun&) = delete;
  ParallelRun& operator=(const ParallelRun&) = delete;
  size_t size() const { return processes_.size(); }
  const ir::Function& function(size_t process) const;

  // Runs body(i, options_i) for every process at once, each on a worker of its own; options_i is
  // `base` with process i's collectives, process and module. Every process catches its own
  // failure, so all run to their end (their waits for peers time out); then a UserError names
  // each process that failed, and the world is made afresh for the next run (a failed collective
  // leaves its peers' meetings behind).
  void run(const std::function<void(size_t process, const interp::Options& options)>& body);

 private:
  struct Process;
  void connect();  // a new world, and each process's communicator and collectives on it
  const ir::Module* module_;
  uint32_t partitions_;
  std::chrono::milliseconds timeout_;
  Traffic* traffic_;
  std::unique_ptr<HostWorld> world_;
  std::vector<std::unique_ptr<Process>> processes_;
};

// Runs programs[r][p] (function names of `module`) as process (replica r, partition p). `inputs`
// are handed out in process order, each process taking as many as its function has parameters;
// the results come back in the same order.
std::vector<ir::Literal> run_parallel(const ir::Module& module,
                                      const std::vector<std::vector<std::string>>& programs,
                                      std::vector<ir::Literal> inputs,
                                      const ParallelOptions& options = {});

}  // namespace tessera::comm
