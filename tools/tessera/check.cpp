#include "tools/tessera/check.h"

#include <fstream>
#include <sstream>

#include "comm/parallel.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"

namespace tessera::tools {
namespace {

std::vector<const ir::Function*> cases_of(const ir::Module& m) {
  if (const ir::Function* main = m.find_function("main")) return {main};
  std::vector<const ir::Function*> out;
  for (const auto& f : m.functions)
    if (f->is_public && f->num_parameters() == 0) out.push_back(f.get());
  return out;
}

// The hooks every case (and every process of its parallel runs) evaluates with.
interp::Options case_options(const ir::Module& m, interp::CheckLog& log, const CheckOptions& o) {
  interp::Options options;
  options.module = &m;
  options.checks = &log;
  options.run_parallel = [&m, &log, o](const ir::Op& op, std::vector<ir::Literal> inputs) {
    comm::ParallelOptions p;
    p.timeout = o.timeout;
    p.base = case_options(m, log, o);
    return comm::run_parallel(m, op.attrs().get<ir::SymbolGrid>("programs").rows, std::move(inputs), p);
  };
  return options;
}

}  // namespace

CheckCounts check_file(const std::string& path, std::ostream& out, const CheckOptions& options) {
  CheckCounts counts;
  std::ifstream in(path);
  if (!in) {
    out << "FAIL " << path << ": cannot read the file\n";
    ++counts.failed;
    return counts;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  for (const stablehlo::Piece& piece : stablehlo::split_pieces(text)) {
    std::unique_ptr<ir::Module> module;
    try {
      module = stablehlo::parse(piece.text, path, piece.first_line);
    } catch (const support::UserError& e) {
      out << "FAIL " << e.what() << "\n";
      ++counts.failed;
      continue;
    }
    for (const ir::Function* fn : cases_of(*module)) {
      std::string where = fmt::format("{}:{} @{}", path, fn->loc.line, fn->name());
      interp::CheckLog log;
      std::string error;
      try {
        interp::evaluate(*fn, {}, case_options(*module, log, options));
      } catch (const std::exception& e) {
        error = e.what();
      }
      std::vector<interp::CheckResult> checks = log.take();
      const interp::CheckResult* failed = nullptr;
      for (const auto& c : checks)
        if (!c.passed && failed == nullptr) failed = &c;
      if (!error.empty()) {
        out << "FAIL " << where << ": " << error << "\n";
      } else if (failed != nullptr) {
        out << fmt::format("FAIL {}: {} at {}:{}: {}; largest difference {}\n", where,
                           failed->check, path, failed->loc.line, failed->detail,
                           failed->max_difference);
      } else {
        out << fmt::format("PASS {} ({} checks)\n", where, checks.size());
        ++counts.passed;
        continue;
      }
      ++counts.failed;
    }
  }
  return counts;
}

}  // namespace tessera::tools
