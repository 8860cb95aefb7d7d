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
  std::vector<ir::Literal> results = executable->run(std::move(args), options, *context);
  std::lock_guard<std::mutex> lock(mu_);
  e->idle.push_back(std::move(context));
  return results;
}

size_t ExecutableCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace tessera::runtime
