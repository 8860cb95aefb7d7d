// Scratch functions shared by the rules that transform a piece of program as a function of its own
// (scratch.h).
#include "autodiff/scratch.h"

#include "autodiff/rules.h"
#include "ir/clone.h"

namespace tessera::autodiff {

using ir::Value;

std::string fresh_name(const ir::Module& m, const std::string& base) {
  for (int k = 0;; ++k) {
    std::string name = fmt::format("{}.{}", base, k);
    if (m.find_function(name) == nullptr) return name;
  }
}

std::vector<Tensor> inline_function(ir::Builder& into, const ir::Function& fn, const std::vector<Tensor>& args) {
  ir::ValueMap map;
  for (size_t i = 0; i < args.size(); ++i) map[fn.parameter(i)] = args[i].value();
  const ir::Block& body = fn.body();
  for (const auto& inner : body.ops())
    if (inner.get() != body.terminator()) renumber_channels(into.module(), *ir::clone_op(into.block(), *inner, map));
  std::vector<Tensor> out;
  for (Value* v : body.terminator()->operands()) out.push_back(into.wrap(map.count(v) ? map.at(v) : v));
  return out;
}

}  // namespace tessera::autodiff
