// The executables of a compiled program: one exec::Executable per device, compiled on the device's
// first run and reused by every later run (DESIGN.md §7). A CompiledProgram carries its cache, so
// its copies (a ShardedProgram's, run_sharded's) share it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <tuple>
#include <vector>

#include "exec/executable.h"

namespace tessera::runtime {

class ExecutableCache {
 public:
  // The executable of `fn` (a function of `module`) for `device`, with the fast kernels or without,
  // and with the fusion planner registered now; compiled the first time it is asked for.
  std::shared_ptr<const exec::Executable> get(const std::shared_ptr<const ir::Module>& module, const ir::Function& fn,
                                              int64_t device, bool fast_kernels);
  size_t size() const;  // executables compiled so far

  // Runs the executable of get(...) in a run context of this program and device: the arena of its
  // buffer plan, made on the first run and kept for the next ones (a run that finds it in use,
  // from another thread, gets another one).
  std::vector<ir::Literal> run(const std::shared_ptr<const ir::Module>& module, const ir::Function& fn,
                               int64_t device, bool fast_kernels, std::vector<ir::Literal> args,
                               const interp::Options& options);
  // The same through Executable::run_into: `lent` arguments borrowed and handed back, `results`
  // refilled (a steady-state run allocates nothing).
  void run_into(const std::shared_ptr<const ir::Module>& module, const ir::Function& fn, int64_t device,
                bool fast_kernels, std::vector<ir::Literal>& args, std::span<const uint8_t> lent,
                std::vector<ir::Literal>& results, const interp::Options& options);

 private:
  using Key = std::tuple<const ir::Module*, const ir::Function*, int64_t, bool, interp::FusionPlanner>;
  struct Entry {
    std::shared_ptr<const ir::Module> module;  // kept alive while its executables are
    std::shared_ptr<const exec::Executable> executable;
    std::vector<std::unique_ptr<exec::RunContext>> idle;  // contexts no run holds now
  };
  Entry& entry(const std::shared_ptr<const ir::Module>& module, const ir::Function& fn, int64_t device,
               bool fast_kernels);  // with mu_ held
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
};

}  // namespace tessera::runtime
