// Builders of tokens, tuples and the ops that call a function or region (builder_effects.cpp):
// after_all, create_token, tuple, get_tuple_element, composite and map.
#pragma once

#include <functional>
#include <string>

#include "ir/builder.h"

namespace tessera::ir {

Tensor after_all(Builder& b, const std::vector<Tensor>& tokens);
Tensor create_token(Builder& b);
Tensor tuple(Builder& b, const std::vector<Tensor>& values);
Tensor get_tuple_element(const Tensor& t, int64_t index);
// stablehlo.composite "name"(args) calling `decomposition` (its results are the function's).
std::vector<Tensor> composite(Builder& b, const std::string& name, const Function& decomposition,
                              const std::vector<Tensor>& args, int64_t version = 0);
// stablehlo.map of `inputs` (one shape): the computation built by `body` from one scalar per input
// returns one scalar of `result_element`.
Tensor map(const std::vector<Tensor>& inputs, ElementType result_element,
           const std::function<Tensor(Builder&, const std::vector<Tensor>&)>& body);

}  // namespace tessera::ir
