// The fuzz targets' contracts, one function per target, shared by the libFuzzer binaries
// (fuzz_main.cpp, clang only) and the regression replay that ctest runs with the regular build
// (tests/fuzz). Each check feeds one input to one reader of outside data and enforces: the input is
// accepted, or refused with a support::UserError; anything else (an InternalError, another
// exception, a reader whose result does not survive its own writer) throws Bug. Crashes, sanitizer
// reports and hangs are caught by the fuzzer itself. Targets and their input formats:
//   parser       StableHLO text; accepted text round-trips: print(parse(print(m))) == print(m)
//   npy          .npy bytes (interp::from_npy); accepted arrays round-trip through to_npy
//   safetensors  safetensors bytes (runtime::parse_safetensors); round-trip through to_safetensors
//   checkpoint   index.json text, then each device file after a kDeviceFileMarker line
//                (runtime::load_sharded_from, without files)
//   mesh_spec    a --mesh value (tools::parse_mesh_spec), applied to two small modules, verified,
//                printed and re-parsed, partitioned
//   input_spec   one byte (the parameter count, mod 8), then an --input value (parse_input_spec)
//   program      StableHLO text; a small program that parses runs through the interpreter and an
//                exec::Executable with the same bits, or both refuse it (target_program.cpp)
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::fuzz {

// A broken contract: the input found a bug. Deliberately not a UserError.
class Bug : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct Target {
  const char* name;
  // True when the input is accepted, false when it is refused with a UserError; throws Bug.
  bool (*check)(std::string_view input);
};

std::span<const Target> targets();
const Target* find_target(std::string_view name);  // null when there is none of that name

// Separates the files of a `checkpoint` input: index.json, then device-0.safetensors, ...
inline constexpr std::string_view kDeviceFileMarker = "\n--- device file ---\n";

// Process-wide settings both drivers need: a 512 MiB limit on array bytes (support/memory.h), so a
// header claiming a huge array is the reader's MemoryLimitError, not the fuzzer's malloc limit.
void setup();

// Small valid inputs for `target` (file name, bytes): the seed corpus (make_corpus.sh writes them
// with fuzz_seeds), and a test that each is accepted, so a check cannot pass by refusing all.
std::vector<std::pair<std::string, std::string>> seeds(std::string_view target);

}  // namespace tessera::fuzz
