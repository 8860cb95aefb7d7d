// The executables of compiled programs, one per (program, device), and their run contexts. See
// executables.h.
#include "runtime/executables.h"

namespace tessera::runtime {

ExecutableCache::Entry& ExecutableCache::entry(const std::shared_ptr<const ir::Module>& module, const ir::Function& fn,
                                               int64_t device, bool fast_kernels) {
  exec::CompileOptions options;
  options.module = module.get();
  if (!fast_kernels) options.accelerate = nullptr;
  Key key{module.get(), &fn, device, fast_kernels, fast_kernels ? options.planner : nullptr};
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second;
  Entry e{module, exec::Executable::compile(fn, options), {}};
  e.idle.reserve(2);
  return entries_.emplace(key, std::move(e)).first->second;
}

std::shared_ptr<const exec::Executable> ExecutableCache::get(const std::shared_ptr<const ir::Module>& module,
                                                             const ir::Function& fn, int64_t device,
                                                             bool fast_kernels) {
  std::lock_guard<std::mutex> lock(mu_);
  return entry(module, fn, device, fast_kernels).executable;
}

std::vector<ir::Literal> ExecutableCache::run(const std::shared_ptr<const ir::Module>& module, const ir::Function& fn,
                                              int64_t device, bool fast_kernels, std::vector<ir::Literal> args,
                                              const interp::Options& options) {
  std::vector<ir::Literal> results;
  run_into(module, fn, device, fast_kernels, args, {}, results, options);
  return results;
}

void ExecutableCache::run_into(const std::shared_ptr<const ir::Module>& module, const ir::Function& fn, int64_t device,
                               bool fast_kernels, std::vector<ir::Literal>& args, std::span<const uint8_t> lent,
                               std::vector<ir::Literal>& results, const interp::Options& options) {
  const exec::Executable* executable;
  std::unique_ptr<exec::RunContext> context;
  Entry* e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    e = &entry(module, fn, device, fast_kernels);  // map entries stay where they are
    executable = e->executable.get();
    if (!e->idle.empty()) {
      context = std::move(e->idle.back());
      e->idle.pop_back();
    }
  }
  if (!context) context = executable->make_context();
  struct GiveBack {  // the context goes back to the idle ones, also when the run fails
    ExecutableCache* cache;
    Entry* e;
    std::unique_ptr<exec::RunContext>& context;
    ~GiveBack() {
      std::lock_guard<std::mutex> lock(cache->mu_);
      e->idle.push_back(std::move(context));
    }
  } give_back{this, e, context};
  executable->run_into(args, lent, results, options, *context);
}

size_t ExecutableCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace tessera::runtime
