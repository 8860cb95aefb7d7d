// libFuzzer target for the StableHLO parser (src/stablehlo/parser.h).
//
// The input bytes are parsed as text. A support::UserError (ParseError or a shape-rule error) is
// the expected outcome for bad input; anything else is a bug: a crash or sanitizer report, an
// InternalError, any other exception. When the parse succeeds, the module is printed, the print is
// parsed again and printed again, and the two prints must be equal (print(parse(print(m))) ==
// print(m)); a failure to re-parse the printer's own output is a bug too. Bugs abort with the
// offending text on stderr, so libFuzzer saves the input as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace {

using tessera::stablehlo::parse;
using tessera::stablehlo::print;

[[noreturn]] void bug(const char* what, const std::string& detail, const std::string& text = "") {
  std::fprintf(stderr, "\n==== parser_fuzz: %s\n%s\n", what, detail.c_str());
  if (!text.empty()) std::fprintf(stderr, "---- text ----\n%s\n---- end ----\n", text.c_str());
  std::abort();
}

// Parses `text`; true on success (module in `out`), false on a UserError. Aborts on anything else.
bool parse_or_user_error(std::string_view text, std::unique_ptr<tessera::ir::Module>& out,
                         const char* stage) {
  try {
    out = parse(text, "fuzz.mlir");
    return true;
  } catch (const tessera::support::UserError&) {
    return false;
  } catch (const tessera::support::InternalError& e) {
    bug(stage, std::string("InternalError: ") + e.what());
  } catch (const std::exception& e) {
    bug(stage, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    bug(stage, "unexpected non-std exception");
  }
}

std::string print_or_abort(const tessera::ir::Module& m, const char* stage) {
  try {
    return print(m);
  } catch (const std::exception& e) {
    bug(stage, std::string("print threw: ") + e.what());
  } catch (...) {
    bug(stage, "print threw a non-std exception");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<tessera::ir::Module> m;
  if (!parse_or_user_error(text, m, "parse of the input")) return 0;

  std::string first = print_or_abort(*m, "print of the parsed input");
  std::unique_ptr<tessera::ir::Module> again;
  try {
    again = parse(first, "printed.mlir");
  } catch (const std::exception& e) {
    bug("re-parse of the printed module failed", e.what(), first);
  }
  std::string second = print_or_abort(*again, "print of the re-parsed module");
  if (second != first) {
    size_t at = 0;
    while (at < first.size() && at < second.size() && first[at] == second[at]) ++at;
    bug("round trip mismatch: print(parse(print(m))) != print(m)",
        "first difference at byte " + std::to_string(at) + "\n---- print(m) ----\n" + first +
            "---- print(parse(print(m))) ----\n" + second);
  }
  return 0;
}
