// The function a tool runs when the user names none: a public @main, else the first public
// function, else a private @main. A private @main is a callee, such as the body of a named
// computation called "main", and loses to any public function.
#pragma once

#include <string_view>

#include "ir/module.h"

namespace tessera::ir {

// `name`'s function when `name` is not empty (a UserError when the module has none), else the
// entry above (a UserError when the module has no function to run).
const Function& entry_function(const Module& module, std::string_view name = {});

}  // namespace tessera::ir
