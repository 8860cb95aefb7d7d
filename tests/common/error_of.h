// The message of the UserError a piece of code throws, for tests that pin error messages.
#pragma once

#include <string>

#include "support/error.h"

namespace tessera::testing {

// e.what() of the UserError that f() throws, or "<no error>".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const support::UserError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace tessera::testing
