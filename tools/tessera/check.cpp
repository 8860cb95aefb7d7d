#include "tools/tessera/check.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "comm/parallel.h"
#include "exec/executable.h"
#include "interp/interpreter.h"
#include "ir/entry.h"
#include "ir/effects.h"
#include "spmd/partition.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "transforms/lower_quantized.h"
#include "transforms/refine_shapes.h"

namespace tessera::tools {
namespace {

// A case's probe folder, emptied: under --probe-dir (kept), or a temporary one (`temporary`).
std::filesystem::path probe_folder(const CheckOptions& o, const std::string& path, int line, const std::string& fn,
                                   bool& temporary) {
  static std::atomic<int64_t> counter{0};
  temporary = o.probe_dir.empty();
  std::string name = fmt::format("{}_{}_{}", std::filesystem::path(path).stem().string(), line, fn);
  std::filesystem::path dir = temporary ? std::filesystem::temp_directory_path() /
                                              fmt::format("tessera-probe-{}-{}", ::getpid(), counter++)
                                        : std::filesystem::path(o.probe_dir) / name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) support::fail("--probe-dir: cannot create {}: {}", dir.string(), ec.message());
  return dir;
}

std::vector<const ir::Function*> cases_of(const ir::Module& m) {
  // A public @main (a private one is a callee: the body of a named computation called "main"), else
  // the public functions without parameters, else the module's entry (ir/entry.h).
  const ir::Function* main = m.find_function("main");
  if (main && main->is_public) return {main};
  std::vector<const ir::Function*> out;
  for (const auto& f : m.functions)
    if (f->is_public && f->num_parameters() == 0) out.push_back(f.get());
  if (out.empty() && (main != nullptr || std::any_of(m.functions.begin(), m.functions.end(), [](const auto& f) { return f->is_public; })))
    out.push_back(&ir::entry_function(m));  // a module to run whole
  return out;
}

// Runs `fn` of `m`: through the reference interpreter, or compiled (CheckOptions::executable).
std::vector<ir::Literal> evaluate(const ir::Module& m, const ir::Function& fn, std::vector<ir::Literal> args,
                                  const interp::Options& options, const CheckOptions& o) {
  if (!o.executable) return interp::evaluate(fn, std::move(args), options);
  // In a run context, as devices run programs: the values in the buffer plan's arena.
  auto e = exec::Executable::compile(fn, exec::CompileOptions{&m});
  std::unique_ptr<exec::RunContext> context = e->make_context();
  return e->run(std::move(args), options, *context);
}

// What a case's outfeed ops wrote, in order: the case's own writes as they happen, and each
// parallel run's after it ends, process by process (so the order does not depend on the threads).
struct Outfeed {
  std::mutex mu;
  std::vector<ir::Literal> values;
  void add(std::vector<ir::Literal> v) {
    std::lock_guard lock(mu);
    for (ir::Literal& x : v) values.push_back(std::move(x));
  }
};

// interpreter.run_parallel's infeed: the values its `infeed` functions make, in order, read by
// every process of the run from the front.
class InfeedQueue {
 public:
  explicit InfeedQueue(std::deque<ir::Literal> values) : values_(std::move(values)), size_(values_.size()) {}
  ir::Literal pop() {
    std::lock_guard lock(mu_);
    if (values_.empty())
      support::fail("stablehlo.infeed: the infeed is empty: its {} value(s) (interpreter.run_parallel's infeed "
                    "functions) were all read", size_);
    ir::Literal v = std::move(values_.front());
    values_.pop_front();
    return v;
  }

 private:
  std::mutex mu_;
  std::deque<ir::Literal> values_;
  size_t size_;
};

interp::Options case_options(const ir::Module& m, interp::CheckLog& log, const CheckOptions& o,
                             const std::string& probe_dir, Outfeed& written);

// Runs interpreter.run_parallel `op`: its infeed functions called first, in order, into one queue
// the processes share; each process's outfeed writes kept apart, then added to `written` in
// process order.
std::vector<ir::Literal> run_parallel(const ir::Module& m, interp::CheckLog& log, const CheckOptions& o,
                                      const std::string& probe_dir, Outfeed& written, const ir::Op& op,
                                      std::vector<ir::Literal> inputs) {
  comm::ParallelOptions p;
  p.timeout = o.timeout;
  p.base = case_options(m, log, o, probe_dir, written);
  std::deque<ir::Literal> fed;
  for (const auto& [key, value] : op.attrs()) {
    if (key != "infeed") continue;
    std::vector<std::string> names = ir::symbol_list_of(value).value();  // verify() read the list
    for (const std::string& name : names) {
      std::vector<ir::Literal> r = evaluate(m, *m.find_function(name), {}, p.base, o);
      if (r.size() != 1) support::fail("run_parallel: infeed function @{} returned {} values, not one", name, r.size());
      fed.push_back(std::move(r[0]));
    }
  }
  auto queue = std::make_shared<InfeedQueue>(std::move(fed));
  p.base.infeed = [queue](const ir::Type&) { return queue->pop(); };  // the kernel checks the type
  const auto& programs = op.attrs().get<ir::SymbolGrid>("programs").rows;
  size_t processes = programs.size() * (programs.empty() ? 0 : programs[0].size());
  std::vector<Outfeed> per_process(processes);
  p.evaluate = [&m, &o, &per_process](int64_t i, const ir::Function& fn, std::vector<ir::Literal> args,
                                      const interp::Options& options) {
    interp::Options mine = options;
    Outfeed& out = per_process.at(static_cast<size_t>(i));
    mine.outfeed = [&out](std::vector<ir::Literal> v) { out.add(std::move(v)); };
    return evaluate(m, fn, std::move(args), mine, o);
  };
  auto keep_written = [&] {
    for (Outfeed& w : per_process) written.add(std::move(w.values));
  };
  try {
    std::vector<ir::Literal> results = comm::run_parallel(m, programs, std::move(inputs), p);
    keep_written();
    return results;
  } catch (...) {
    keep_written();
    throw;
  }
}

// The hooks every case (and every process of its parallel runs) evaluates with. The case's own
// infeed is empty (only interpreter.run_parallel fills one); its outfeed writes go to `written`.
interp::Options case_options(const ir::Module& m, interp::CheckLog& log, const CheckOptions& o,
                             const std::string& probe_dir, Outfeed& written) {
  interp::Options options;
  options.module = &m;
  options.probe_dir = probe_dir;
  options.checks = &log;
  options.outfeed = [&written](std::vector<ir::Literal> v) { written.add(std::move(v)); };
  options.run_parallel = [&m, &log, o, probe_dir, &written](const ir::Op& op, std::vector<ir::Literal> inputs) {
    return run_parallel(m, log, o, probe_dir, written, op, std::move(inputs));
  };
  return options;
}

bool has_shardings(const ir::Block& b) {
  for (const auto& op : b.ops()) {
    if (ir::has_trait(op->kind(), ir::kShardy) || op->attrs().has("sdy.sharding")) return true;
    for (const auto& r : op->regions())
      if (has_shardings(*r)) return true;
  }
  return false;
}

// Whether `fn` says anything about layouts: then it is a global program to partition.
bool has_shardings(const ir::Function& fn) {
  for (size_t i = 0; i < fn.num_parameters(); ++i)
    if (fn.arg_sharding(i)) return true;
  for (size_t i = 0; i < fn.result_types.size(); ++i)
    if (fn.result_sharding(i)) return true;
  return has_shardings(fn.body());
}

// A test's RUN commands, with `\` continuations joined.
std::vector<std::string> run_commands(const std::string& text) {
  std::vector<std::string> commands;
  bool continued = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("// RUN:", 0) != 0) {
      continued = false;
      continue;
    }
    std::string body = line.substr(7);
    bool next = !body.empty() && body.back() == '\\';
    if (next) body.pop_back();
    if (continued) commands.back() += body;
    else commands.push_back(body);
    continued = next;
  }
  return commands;
}

// The function renamings of a test's RUN lines: each `sed 's/FROM/TO/g'` applied to a converted
// part1 makes one more copy of its programs; without any, one copy keeps the names.
std::vector<std::pair<std::string, std::string>> renamings(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& cmd : run_commands(text)) {
    if (cmd.find("part1.mlir") == std::string::npos) continue;
    size_t at = cmd.find("sed 's/");
    if (at == std::string::npos) continue;
    size_t from = at + 7, mid = cmd.find('/', from), end = mid == std::string::npos ? mid : cmd.find('/', mid + 1);
    if (end == std::string::npos) continue;
    out.push_back({cmd.substr(from, mid - from), cmd.substr(mid + 1, end - mid - 1)});
  }
  if (out.empty()) out.push_back({"", ""});
  return out;
}

// Whether a test runs its programs as replicas (N x 1: stablehlo ops without a channel then talk
// across replicas, and Shardy's conversion numbers devices by replica id). The counts are said in
// three ways: the wrapper's flags (`--replica_count=4 --partition_count=1`), its positional
// arguments (`run_sdy_interpreter_test.sh SRC TMP HALO REPLICAS PARTITIONS`), or the conversion
// pass's options (`--sdy-convert-global-to-local="replica-count=4 partition-count=1"`). Each
// count is 1 where unsaid, as in the wrapper.
bool runs_as_replicas(const std::string& text) {
  int64_t replicas = 1, partitions = 1;
  auto number_after = [](const std::string& cmd, const std::string& key, int64_t& into) {
    for (size_t at = cmd.find(key); at != std::string::npos; at = cmd.find(key, at + 1)) {
      size_t end = at + key.size();
      int64_t n = 0;
      bool digits = false;
      for (; end < cmd.size() && std::isdigit(static_cast<unsigned char>(cmd[end])) && n < 1000000; ++end, digits = true)
        n = n * 10 + (cmd[end] - '0');
      if (digits) into = n;
    }
  };
  for (const std::string& cmd : run_commands(text)) {
    for (const char* key : {"--replica_count=", "replica-count="}) number_after(cmd, key, replicas);
    for (const char* key : {"--partition_count=", "partition-count="}) number_after(cmd, key, partitions);
    size_t at = cmd.find("run_sdy_interpreter_test.sh");
    if (at == std::string::npos) continue;
    std::istringstream words(cmd.substr(at));
    std::string word;
    words >> word;  // the script
    int position = 0;
    while (words >> word) {
      if (word.rfind("--", 0) == 0) continue;
      if (word.size() >= 2 && word.front() == '"' && word.back() == '"') word = word.substr(1, word.size() - 2);
      ++position;
      bool number = !word.empty() && word.size() < 7 && std::all_of(word.begin(), word.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      if (position == 4 && number) replicas = std::stoll(word);
      if (position == 5 && number) partitions = std::stoll(word);
    }
  }
  return replicas > 1 && partitions == 1;
}

std::string renamed(const std::string& name, const std::pair<std::string, std::string>& r) {
  if (r.first.empty()) return name;
  std::string out = name;
  for (size_t at = out.find(r.first); at != std::string::npos; at = out.find(r.first, at + r.second.size()))
    out.replace(at, r.first.size(), r.second);
  return out;
}

// Shardy's executable tests: part1 holds sharded programs, part2 runs them with
// interpreter.run_parallel on each device's local pieces. Tessera partitions part1 itself and runs
// part2 against the result.
std::unique_ptr<ir::Module> assemble_executable(const std::string& text, const stablehlo::Piece& part1,
                                                const stablehlo::Piece& part2, const std::string& path) {
  (void)part2.first_line;
  // Parsed together (part2 calls part1's sequential functions); the separator line becomes blank.
  std::string both = std::string(part1.text) + "\n" + std::string(part2.text);
  auto global = stablehlo::parse(both, path, part1.first_line, /*verify=*/false);
  transforms::lower_quantized(*global);  // quantized ops as dequantize -> op -> quantize
  auto out = std::make_unique<ir::Module>();
  const bool as_replicas = runs_as_replicas(text);
  for (const auto& r : renamings(text))
    for (const auto& f : global->functions)
      if (has_shardings(*f)) {
        spmd::PartitionOptions o;
        o.name = renamed(f->name(), r);
        o.devices_are_replicas = as_replicas;  // numbered by replica, collectives across replicas
        spmd::partition(*global, *f, *out, o);
      }
  for (auto& f : global->functions)
    if (!has_shardings(*f) && !out->find_function(f->name())) out->functions.push_back(std::move(f));
  // Shardy's test wrapper (run_sdy_interpreter_test.sh): when part1 defines @parallel_x but no
  // @sequential_x, part2's @sequential_x is part1 with every `parallel_` renamed `sequential_`
  // and its shardings dropped. The interpreter runs a global program's sharding ops as the
  // identity, so the renamed copy runs unpartitioned as it is.
  std::string_view p1 = part1.text;
  if (p1.find("@parallel_") != std::string_view::npos && p1.find("@sequential_") == std::string_view::npos) {
    std::string sequential(p1);
    const std::string from = "parallel_", to = "sequential_";
    for (size_t at = sequential.find(from); at != std::string::npos; at = sequential.find(from, at + to.size()))
      sequential.replace(at, from.size(), to);
    auto copy = stablehlo::parse(sequential, path, part1.first_line, /*verify=*/false);
    transforms::lower_quantized(*copy);
    for (auto& f : copy->functions)
      if (!out->find_function(f->name())) out->functions.push_back(std::move(f));
  }
  ir::verify(*out);
  return out;
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
  std::vector<stablehlo::Piece> pieces = stablehlo::split_pieces(text);
  const stablehlo::Piece *part1 = nullptr, *part2 = nullptr;
  for (const auto& p : pieces) {
    if (p.name == "part1.mlir") part1 = &p;
    if (p.name == "part2.mlir") part2 = &p;
  }
  bool executable = part1 && part2;
  for (const stablehlo::Piece& piece : pieces) {
    if (executable && &piece != part2) continue;  // one module: part1 partitioned, run by part2
    std::unique_ptr<ir::Module> module;
    try {
      module = executable ? assemble_executable(text, *part1, *part2, path)
                          : stablehlo::parse(piece.text, path, piece.first_line);
    } catch (const support::UserError& e) {
      out << "FAIL " << e.what() << "\n";
      ++counts.failed;
      continue;
    } catch (const std::exception& e) {
      // A bug of ours on this piece is its failure, said as one, and the next piece still runs.
      out << fmt::format("FAIL {}:{}: internal error: {}\n", path, piece.first_line, e.what());
      ++counts.failed;
      continue;
    }
    for (const ir::Function* fn : cases_of(*module)) {
      std::string where = fmt::format("{}:{} @{}", path, fn->loc.line, fn->name());
      interp::CheckLog log;
      Outfeed written;
      std::string error;
      bool temporary = false;
      std::filesystem::path probes;
      if (fn->num_parameters() > 0) {
        try {
          std::string name = fn->name();
          interp::Options run_options = case_options(*module, log, options, "", written);
          auto run = [&](const ir::Function& refined, std::vector<ir::Literal> args) {
            return evaluate(*module, refined, std::move(args), run_options, options);
          };
          out << fmt::format("PASS {} ({})\n", where, check_module(*module, name, path, run));
          ++counts.passed;
        } catch (const std::exception& e) {
          out << "FAIL " << where << ": " << e.what() << "\n";
          ++counts.failed;
        }
        break;  // the module was changed (refined): no other case of it runs
      }
      try {
        // Ops on quantized values run as dequantize -> op -> quantize, as the spec defines them.
        transforms::lower_quantized(*module);
        if (transforms::has_dynamic_types(*fn)) {  // shapes refined first (no arguments: constants only)
          std::string name = fn->name();
          transforms::refine_shapes(*module, name, {});
          fn = module->find_function(name);
        }
        probes = probe_folder(options, path, fn->loc.line, fn->name(), temporary);
        evaluate(*module, *fn, {}, case_options(*module, log, options, probes.string(), written), options);
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (temporary && !probes.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(probes, ec);
      }
      std::vector<interp::CheckResult> checks = log.take();
      const interp::CheckResult* failed = nullptr;
      for (const auto& c : checks)
        if (!c.passed && failed == nullptr) failed = &c;
      // Every value the case wrote to the outfeed, one line each after the case's line.
      std::string outfeed_lines;
      for (const ir::Literal& v : written.values) outfeed_lines += "  outfeed: " + stablehlo::print(v) + "\n";
      std::string outfeed_count =
          written.values.empty() ? "" : fmt::format(", {} outfeed value(s)", written.values.size());
      if (!error.empty()) {
        out << "FAIL " << where << ": " << error << "\n";
      } else if (failed != nullptr) {
        out << fmt::format("FAIL {}: {} at {}:{}: {}; largest difference {}\n", where,
                           failed->check, path, failed->loc.line, failed->detail,
                           failed->max_difference);
      } else if (checks.empty() && written.values.empty()) {
        // A case that checks nothing shows nothing: it ran, but no result was compared. (One whose
        // effect is its outfeed shows what it wrote.)
        out << fmt::format("FAIL {}: no check ran (a case compares its results with check.* ops)\n", where);
      } else {
        out << fmt::format("PASS {} ({} checks{})\n", where, checks.size(), outfeed_count) << outfeed_lines;
        ++counts.passed;
        continue;
      }
      out << outfeed_lines;
      ++counts.failed;
    }
  }
  // A file that runs nothing checks nothing: an empty or misnamed file must not look like a pass.
  if (counts.passed + counts.failed == 0) {
    out << "FAIL " << path << ": no test cases (@main, or public functions without parameters)\n";
    ++counts.failed;
  }
  return counts;
}

}  // namespace tessera::tools
