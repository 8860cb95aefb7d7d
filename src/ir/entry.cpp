// The entry function (entry.h).
#include "ir/entry.h"

#include "support/error.h"

namespace tessera::ir {

const Function& entry_function(const Module& module, std::string_view name) {
  if (!name.empty()) {
    if (const Function* f = module.find_function(name)) return *f;
    support::fail("the module has no function @{}", name);
  }
  const Function* main = module.find_function("main");
  if (main && main->is_public) return *main;
  for (const auto& f : module.functions)
    if (f->is_public) return *f;
  if (main) return *main;
  support::fail("the module has no public function");
}

}  // namespace tessera::ir
