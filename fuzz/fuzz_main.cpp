// libFuzzer entry point, compiled once per target with TESSERA_FUZZ_TARGET naming it (CMakeLists.txt):
// the input goes to that target's check (targets.h), and a Bug aborts with its description on
// stderr, so libFuzzer keeps the input as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/targets.h"

namespace {
const tessera::fuzz::Target* target = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::setup();
  target = tessera::fuzz::find_target(TESSERA_FUZZ_TARGET);
  if (!target) {
    std::fprintf(stderr, "no fuzz target named %s\n", TESSERA_FUZZ_TARGET);
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    target->check({reinterpret_cast<const char*>(data), size});
  } catch (const tessera::fuzz::Bug& bug) {
    std::fprintf(stderr, "\n==== %s_fuzz: %s\n", TESSERA_FUZZ_TARGET, bug.what());
    std::abort();
  }
  return 0;
}
