// interpreter.run_parallel for real: a grid of programs (num_replicas x num_partitions) run
// concurrently, one host-device thread per process (a persistent worker of support/threads.h,
// reused by every run), their collectives exchanging data through a HostWorld. A process that
// waits too long for its peers ends with a TimeoutError, so a program that deadlocks fails in
// bounded time and every process has ended when the call returns.
#pragma once

#include <chrono>
#include <functional>
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

// Runs programs[r][p] (function names of `module`) as process (replica r, partition p). `inputs`
// are handed out in process order, each process taking as many as its function has parameters;
// the results come back in the same order.
std::vector<ir::Literal> run_parallel(const ir::Module& module,
                                      const std::vector<std::vector<std::string>>& programs,
                                      std::vector<ir::Literal> inputs,
                                      const ParallelOptions& options = {});

}  // namespace tessera::comm
