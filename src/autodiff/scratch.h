// Scratch functions for the rules that differentiate or batch a piece of program as a program of
// its own (if/case branches, composite's decomposition, map's computation): the piece is copied
// into a scratch function, reverse()/forward()/vmap() transforms it (every op inside on its own
// rule), and the result is copied back into the caller with inline_function (scratch.cpp).
#pragma once

#include <string>
#include <vector>

#include "ir/builder.h"

namespace tessera::autodiff {

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

}  // namespace tessera::autodiff
