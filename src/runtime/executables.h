// The executables of a compiled program: one exec::Executable per device, compiled on the device's
// first run and reused by every later run (DESIGN.md §7). A CompiledProgram carries its cache, so
// its copies (a ShardedProgram's, run_sharded's) share it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "exec/executable.h"

namespace tessera::runtime {

class ExecutableCache {
 public:
  // The executable of `fn` (a function of `module`) for `device`, with the fast kernels or without,
  // and with the fusion planner registered now; compiled the first time it is asked for.
  std::shared_ptr<const exec::Executable> get(const std::shared_ptr<const ir::Module>& module, const ir::Function& fn,
                                              int64_t device, bool fast_kernels);
  size_t size() const;  // executables compiled so far

 private:
  using Key = std::tuple<const ir::Module*, const ir::Function*, int64_t, bool, interp::FusionPlanner>;
  struct Entry {
    std::shared_ptr<const ir::Module> module;  // kept alive while its executables are
    std::shared_ptr<const exec::Executable> executable;
  };
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
};

}  // namespace tessera::runtime
