// Scratch functions for the rules that differentiate or batch a piece of program as a program of
// its own (if/case branches, composite's decomposition, map's computation): the piece is copied
// into a scratch function, reverse()/forward()/vmap() transforms it (every op inside on its own
// rule), and the result is copied back into the caller with inline_function (scratch.cpp).
#pragma once

#include <string>
#include <vector>

#include "ir/builder.h"

namespace tessera::autodiff {

class VjpContext;
class JvpContext;
class VmapContext;

// A module-unique name for a scratch function: base.0, base.1, ...
std::string fresh_name(const ir::Module& m, const std::string& base);

// Removes the scratch functions when the rule ends, however it ends.
struct Scratch {
  ir::Module& m;
  std::vector<const ir::Function*> fns;
  ~Scratch() {
    for (auto it = fns.rbegin(); it != fns.rend(); ++it) m.remove_function(**it);
  }
};

// fn's body copied into `into` with its parameters read as `args`; returns its results (the
// copies' collectives get fresh channel ids).
std::vector<ir::Tensor> inline_function(ir::Builder& into, const ir::Function& fn, const std::vector<ir::Tensor>& args);

// An op differentiated or batched as the function `d` of its operands that computes its results
// (composite's decomposition, the batch-norm ops' expansion): d is transformed on its ops' own
// rules and inlined into the caller (rules_effects.cpp). vmap_through calls the batched function
// (kept in the module) unless `inline_it`, which inlines it and removes it.
void vjp_through(VjpContext& c, const ir::Function& d);
void jvp_through(JvpContext& c, const ir::Function& d);
void vmap_through(VmapContext& c, const ir::Function& d, bool inline_it);

}  // namespace tessera::autodiff
