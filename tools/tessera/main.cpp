// The tessera command line. Subcommands grow with the layers beneath them; each is a thin shell
// over a library call.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "ir/op_kind.h"
#include "support/error.h"
#include "tools/tessera/check.h"
#include "tools/tessera/partition_cmd.h"

namespace {

// `tessera ops`: the op table, one row per primitive, with its arity and traits.
int list_ops() {
  using namespace tessera::ir;
  const std::pair<OpTrait, const char*> traits[] = {
      {kPure, "pure"},           {kElementwise, "elementwise"}, {kCommutative, "commutative"},
      {kCollective, "collective"}, {kHasRegions, "regions"},     {kTerminator, "terminator"},
      {kShardy, "shardy"}};
  for (int i = 0; i < kNumOpKinds; ++i) {
    const OpInfo& op = info(static_cast<OpKind>(i));
    std::string t;
    for (auto [bit, name] : traits)
      if (op.traits & bit) t += fmt::format("{}{}", t.empty() ? "" : ",", name);
    std::string arity = op.arity == kVariadic ? "variadic" : fmt::format("{}", op.arity);
    fmt::print("{:<34} {:>8}  {}\n", op.spelling, arity, t);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera: sharded tensor programs"};
  app.require_subcommand(1);
  auto* ops = app.add_subcommand("ops", "List the op table (ops.def)");
  auto* check = app.add_subcommand("check", "Run the cases of StableHLO interpreter test files");
  std::vector<std::string> files;
  double timeout_s = 30;
  check->add_option("files", files, "Test files (.mlir)")->required()->check(CLI::ExistingFile);
  check->add_option("--timeout", timeout_s, "Seconds a collective waits for its peers")
      ->check(CLI::PositiveNumber);
  auto* part = app.add_subcommand("partition", "Print a module's per-device program and what it communicates");
  tessera::tools::PartitionCommand pc;
  part->add_option("file", pc.file, "StableHLO module (.mlir)")->required()->check(CLI::ExistingFile);
  part->add_option("--function", pc.function, "Function to partition (default @main or the first public one)");
  part->add_option("--mesh", pc.mesh, "Axes of the module's mesh, e.g. data=4,model=2");
  auto* run = app.add_subcommand("run", "Run a StableHLO module on host devices");
  tessera::tools::RunCommand rc;
  run->add_option("file", rc.file, "StableHLO module (.mlir)")->required()->check(CLI::ExistingFile);
  run->add_option("--devices", rc.devices, "Number of host devices")->check(CLI::PositiveNumber);
  run->add_option("--input", rc.inputs, "argN=file.npy, one per parameter");
  run->add_option("--output-dir", rc.output_dir, "Where result<i>.npy are written");
  run->add_option("--function", rc.function, "Function to run (default @main or the first public one)");
  run->add_option("--mesh", rc.mesh, "Axes of the module's mesh, e.g. data=4");
  CLI11_PARSE(app, argc, argv);
  try {
    if (ops->parsed()) return list_ops();
    if (part->parsed()) return tessera::tools::partition_command(pc, std::cout);
    if (run->parsed()) return tessera::tools::run_command(rc, std::cout);
    if (check->parsed()) {
      tessera::tools::CheckOptions options;
      options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
      tessera::tools::CheckCounts total;
      for (const std::string& f : files) {
        auto c = tessera::tools::check_file(f, std::cout, options);
        total.passed += c.passed;
        total.failed += c.failed;
      }
      std::cout << fmt::format("{} passed, {} failed\n", total.passed, total.failed);
      return total.failed == 0 ? 0 : 1;
    }
  } catch (const tessera::support::UserError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
