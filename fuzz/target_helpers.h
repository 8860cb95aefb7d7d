// The stages of a fuzz check (targets.h), shared by the targets' files: `refusable` runs the reader
// under test (a UserError means "refused", anything else is a Bug), `must` what has to work on an
// accepted input (any exception is a Bug), `expect` a contract.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include "fuzz/targets.h"
#include "support/error.h"

namespace tessera::fuzz {

inline std::string describe_current_exception() {
  try {
    throw;
  } catch (const support::InternalError& e) {
    return std::string("InternalError: ") + e.what();
  } catch (const std::exception& e) {
    return fmt::format("unexpected exception ({}): {}", typeid(e).name(), e.what());
  } catch (...) {
    return "unexpected non-std exception";
  }
}

template <typename F>
bool refusable(const char* stage, F&& f) {
  try {
    f();
    return true;
  } catch (const support::UserError&) {
    return false;
  } catch (...) {
    throw Bug(fmt::format("{}: {}", stage, describe_current_exception()));
  }
}

template <typename F>
void must(const char* stage, F&& f) {
  try {
    f();
  } catch (...) {
    throw Bug(fmt::format("{}: {}", stage, describe_current_exception()));
  }
}

inline void expect(bool ok, const std::string& what) {
  if (!ok) throw Bug(what);
}

// The `program` target (target_program.cpp).
bool check_program(std::string_view text);

}  // namespace tessera::fuzz
