#include "runtime/executables.h"

namespace tessera::runtime {

std::shared_ptr<const exec::Executable> ExecutableCache::get(const std::shared_ptr<const ir::Module>& module,
                                                             const ir::Function& fn, int64_t device,
                                                             bool fast_kernels) {
  exec::CompileOptions options;
  options.module = module.get();
  if (!fast_kernels) options.accelerate = nullptr;
  Key key{module.get(), &fn, device, fast_kernels, fast_kernels ? options.planner : nullptr};
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second.executable;
  Entry e{module, exec::Executable::compile(fn, options)};
  return entries_.emplace(key, std::move(e)).first->second.executable;
}

size_t ExecutableCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace tessera::runtime
