// `tessera check FILE...`: runs the test cases of StableHLO interpreter test files.
//
// A file is cut into pieces at `// -----` (or `//--- name`); each piece is parsed and each of its
// cases run: @main when the piece has one, otherwise every public function without parameters.
// check.* ops and the check custom calls report to the case; interpreter.run_parallel runs its
// grid of programs on host-device threads with real data exchange. Its optional `infeed = [@f, ...]`
// names functions (no parameters, one tensor result) that are called in order, before the
// processes start, to make the values of an infeed queue that its processes share: each
// stablehlo.infeed takes the next value from the front. Whatever stablehlo.outfeed writes (the
// case's own writes in order, then each parallel run's process by process) is printed after the
// case's line, one `  outfeed: dense<...> : tensor<...>` line per value, and counted on it; a case
// whose only effect is its outfeed passes ("(0 checks, 2 outfeed value(s))"). One line per case
// (PASS, or FAIL with file:line, the check and the largest difference), then "N passed, M failed". With
// --executable the cases run compiled (exec::Executable), the way devices run programs. Probes
// (interpreter.probe) write under --probe-dir, a folder per case.
//
// A piece whose @main takes arguments is a module, not a case (JAX's exports in StableHLO's
// testdata, the shape-polymorphic ones above all, whose RUN lines round-trip them): it passes when
// print -> parse -> print keeps its text and it runs on generated arguments (check_module.cpp).
#pragma once

#include <chrono>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::tools {

struct CheckOptions {
  std::chrono::milliseconds timeout = std::chrono::seconds(30);  // per collective wait
  // Run each case, and each process of its parallel runs, as an exec::Executable with the fast
  // kernels (as the Session's devices do) instead of the reference interpreter.
  bool executable = false;
  // Where interpreter.probe writes its .npy files: a folder per case under it (emptied when the case
  // starts, kept afterwards). Empty: a temporary folder per case, removed when the case ends.
  std::string probe_dir;
};

struct CheckCounts {
  int passed = 0, failed = 0;
};

// The check of a module whose @`entry` takes arguments (see above): what passed, or a UserError
// naming the step that failed. Lowers the module's quantized ops and refines its shapes; `run`
// runs the refined function as check_file runs its cases (the interpreter, or --executable).
using ModuleRunner = std::function<std::vector<ir::Literal>(const ir::Function&, std::vector<ir::Literal>)>;
std::string check_module(ir::Module& module, const std::string& entry, const std::string& path,
                         const ModuleRunner& run);

CheckCounts check_file(const std::string& path, std::ostream& out, const CheckOptions& options = {});

}  // namespace tessera::tools
