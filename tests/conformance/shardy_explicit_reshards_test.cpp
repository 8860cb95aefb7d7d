// Whole functions against Shardy's insert_explicit_reshards (issue #18 item 4): for every function
// of shardy-tests/insert_explicit_reshards/*.mlir, the reshards and all_reduces its CHECK lines
// expect (`sdy.reshard %v <layout>`, `sdy.all_reduce {axes} %v out_sharding=<layout>`) are each
// costed with Tessera's own cost of the same move (spmd::reshard_bytes: the bytes per device that
// our reshard of a value of that type from the value's layout to the named one records; an
// all_reduce is the reshard from its layout partial along its axes to the layout itself), summed,
// and compared with the bytes per device that Tessera's partitioner records for the input function.
// Costing Shardy's moves with our reshard compares the choice of moves, not two accountings.
//
// Each expected move names the value it moves: a function argument, or the result of an op of an
// earlier CHECK line. That op is matched with the input function's op of the same kind in the same
// place (the k-th stablehlo.dot of the CHECK lines is the k-th of the input: Shardy inserts
// reshards and collectives, never other ops), which gives the value's type; its layout is the one
// the CHECK line prints (sharding_per_value), else the input op's, else replicated. A value may
// be named by its number in the printed program (%0, %1: the k-th CHECK line defining a value).
// A function whose moves cannot be read this way is listed, with the reason, as not compared.
//
// The CHECK lines may leave moves out (a CHECK line matches the start of its line, so an
// all_reduce after a contraction may go unchecked; the reshard of a returned value to the
// function's declared result layout is not the pass's): so each op of the CHECK lines is also
// partitioned alone by Tessera at Shardy's layouts (its operands as the CHECK line names them,
// its results as printed, partial along the axes a later all_reduce of them sums), and what that
// moves is added; and a returned value (the last one defined where no CHECK line shows the
// return) is costed to the declared result layout. A stablehlo.dot of the CHECK lines is the
// dot_general the parser reads it as.
//
// A function where Tessera moves more fails, unless docs/CONFORMANCE.md lists it with both byte
// counts and the reason (a listed function that no longer moves exactly that fails too: the list
// can only shrink); where it moves less it is printed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <variant>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/module.h"
#include "shardy_text.h"
#include "spmd/mesh_math.h"
#include "spmd/partition.h"
#include "spmd/reshard.h"
#include "stablehlo/parser.h"

namespace tessera {
namespace {

// The CHECK lines of each function (CHECK-SAME joined to the line before), by function name.
std::map<std::string, std::vector<std::string>> check_lines(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream lines(text);
  std::string line, current;
  std::regex label(R"(CHECK-LABEL: func(?:\.func)? @([A-Za-z0-9_]+))");
  std::regex check(R"(^\s*//\s*CHECK(-NEXT|-SAME|-NOT)?:\s*(.*)$)");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, label)) {
      current = m[1];
      out[current];
    } else if (!current.empty() && std::regex_search(line, m, check)) {
      if (m[1] == "-NOT") continue;
      if (m[1] == "-SAME" && !out[current].empty()) out[current].back() += " " + m[2].str();
      else out[current].push_back(m[2]);
    }
  }
  return out;
}

// The first `<@mesh, [...]...>` at or after `from` in `line`, closed with '>' where the CHECK line
// stops before it; "" when there is none or it is cut inside its brackets.
std::string sharding_text(const std::string& line, size_t from) {
  size_t at = line.find("<@", from);
  if (at == std::string::npos) return "";
  int depth = 0;
  for (size_t i = at + 1; i < line.size(); ++i) {
    char c = line[i];
    if (c == '[' || c == '{' || c == '<') ++depth;
    else if (c == ']' || c == '}') --depth;
    else if (c == '>') {
      if (depth == 0) return line.substr(at, i - at + 1);
      --depth;
    }
  }
  return depth == 0 ? line.substr(at) + ">" : "";
}

struct Known {
  ir::Type type;
  std::optional<ir::Sharding> sharding;  // nullopt: replicated
};

struct Expected {
  int64_t bytes = 0;
  std::vector<std::string> moves;  // one line per move, for messages
};

// The bytes per device Tessera moves to run `op` alone with its operands laid out as `in` (where
// known; else as the input says) and its results as `out`.
int64_t op_bytes(const ir::Module& module, const ir::Op& op, const std::vector<std::optional<ir::Sharding>>& in,
                 const std::vector<Known>& out) {
  ir::Module alone("alone");
  for (const ir::Mesh& mesh : module.meshes) alone.add_mesh(mesh);
  ir::Function& f = ir::build_function(alone, "op", [&](ir::FunctionBuilder& b) {
    ir::ValueMap map;
    for (size_t i = 0; i < op.operands().size(); ++i) {
      std::optional<ir::Sharding> s = i < in.size() ? in[i] : std::nullopt;
      map[op.operand(i)] = b.param(op.operand(i)->type(), s).value();
    }
    ir::Op* copy = ir::clone_op(b.block(), op, map);
    ir::ShardingList list;
    for (const Known& k : out)
      list.push_back(k.sharding ? *k.sharding : spmd::replicated(module.meshes.front().name, k.type.shape.size()));
    copy->attrs().set("sdy.sharding", list);
    std::vector<ir::Tensor> results;
    for (ir::Value* r : copy->results()) results.push_back(ir::Tensor(r, &b));
    return results;
  });
  for (size_t r = 0; r < out.size(); ++r)
    if (out[r].sharding) f.set_result_sharding(r, *out[r].sharding);
  ir::Module local("local");
  return spmd::partition(alone, f, local).report.bytes_per_device();
}

// Shardy's expected moves of `fn`, costed with our reshard; a reason when they cannot be read.
std::variant<Expected, std::string> shardy_bytes(const ir::Module& module, const ir::Function& fn,
                                                 const std::vector<std::string>& lines, const std::string& meshes,
                                                 spmd::LocalContext& ctx) {
  std::map<std::string, Known> values;
  for (size_t i = 0; i < fn.num_parameters(); ++i)
    values["arg" + std::to_string(i)] = Known{fn.parameter(i)->type(), fn.arg_sharding(i)};
  // The input's top-level ops of each kind, in order.
  std::map<std::string, std::vector<const ir::Op*>> ops_of_kind;
  for (const auto& op : fn.body().ops()) ops_of_kind[std::string(ir::spelling(op->kind()))].push_back(op.get());
  std::map<std::string, size_t> seen;

  std::regex defined(R"(^%(?:\[\[([A-Za-z0-9_]+):\.\*\]\]|([A-Za-z0-9_]+))(?::\d+)?\s*=)");
  std::regex move(R"(sdy\.(reshard|all_reduce|all_gather|all_slice|all_to_all|collective_permute|reduce_scatter)\b(\s*\{[^}]*\})?\s*%(?:\[\[([A-Za-z0-9_]+)\]\]|([A-Za-z0-9_]+))(?:#(\d+))?)");
  std::regex stablehlo_op(R"(\b(stablehlo\.[a-z_]+))");
  // Values the printed program numbers (%0, %1, ...: one number per op with results, in order)
  // may be named by number on a later line: the k-th CHECK line that defines a value is %k, unless
  // it names its number itself.
  std::regex argument(R"(^%\[\[([A-Za-z0-9_]+):\.\*\]\]:\s*tensor)");
  size_t arguments = 0, numbered = 0;
  bool returned = false;
  std::string last_defined;
  Expected e;
  // The function's results as it declares them: a value returned in another layout is
  // resharded (the pass leaves that to the function's boundary; Tessera's partition does it).
  auto returns = [&](const std::string& text) {
    std::regex operand(R"(%(?:\[\[([A-Za-z0-9_]+)\]\]|([A-Za-z0-9_]+)))");
    size_t r = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), operand); it != std::sregex_iterator(); ++it, ++r) {
      const std::smatch& o = *it;
      auto v = values.find(o[1].matched ? o[1].str() : o[2].str());
      std::optional<ir::Sharding> declared = r < fn.result_types.size() ? fn.result_sharding(r) : std::nullopt;
      if (v == values.end() || !declared) continue;
      const ir::Type& type = v->second.type;
      int64_t bytes = spmd::reshard_bytes(
          ctx, type, v->second.sharding ? *v->second.sharding : spmd::replicated(declared->mesh, type.shape.size()),
          *declared);
      if (bytes == 0) continue;
      e.bytes += bytes;
      e.moves.push_back(fmt::format("result {} to its declared layout (no CHECK line): {} B", r, bytes));
    }
  };
  for (size_t l = 0; l < lines.size(); ++l) {
    const std::string& line = lines[l];
    std::smatch d, m;
    if (line.starts_with("return")) {
      returned = true;
      returns(line);
      continue;
    }
    if (line.starts_with("func.func")) continue;
    if (std::regex_search(line, d, argument) && arguments < fn.num_parameters()) {
      values[d[1]] = values["arg" + std::to_string(arguments++)];  // a CHECK-SAME naming an argument
      continue;
    }
    std::vector<std::string> names;  // what the line's value is called: by name and by number
    if (std::regex_search(line, d, defined)) {
      const std::string name = d[1].matched ? d[1].str() : d[2].str();
      const bool constant = name.starts_with("cst") || name.starts_with("c_") || name == "c";
      if (!d[1].matched && std::all_of(name.begin(), name.end(), ::isdigit)) numbered = std::stoul(name);
      names = {name};
      if (!constant) names.push_back(std::to_string(numbered++)), last_defined = name;
    }
    if (std::regex_search(line, m, move)) {
      const std::string kind = m[1];
      const std::string source = m[3].matched ? m[3].str() : m[4].str();
      auto it = values.find(m[5].matched ? source + "#" + m[5].str() : source);
      if (it == values.end()) it = values.find(source);
      if (it == values.end()) return fmt::format("sdy.{} of %{}, a value no earlier CHECK line defines", kind, source);
      const Known& from = it->second;
      std::string target = sharding_text(line, static_cast<size_t>(m.position(0) + m.length(0)));
      if (target.empty()) return fmt::format("sdy.{} of %{} without a readable layout", kind, source);
      ir::Sharding to = shardy_text::parse_sharding(meshes, from.type, target);
      ir::Sharding in = from.sharding ? *from.sharding : spmd::replicated(to.mesh, from.type.shape.size());
      if (kind == "all_reduce") {
        in = to;
        for (const ir::AxisRef& a : shardy_text::axes_in(m[2])) in.unreduced.push_back(a);
      } else if (kind != "reshard") {
        return fmt::format("sdy.{} (this test costs reshards and all_reduces)", kind);
      }
      int64_t bytes = spmd::reshard_bytes(ctx, from.type, in, to);
      e.bytes += bytes;
      e.moves.push_back(fmt::format("sdy.{} of %{} to {}: {} B", kind, source, target, bytes));
      for (const std::string& n : names) values[n] = Known{from.type, to};
    } else if (std::regex_search(line, m, stablehlo_op)) {
      const std::string kind = m[1] == "stablehlo.dot" ? "stablehlo.dot_general" : m[1].str();
      size_t k = seen[kind]++;
      if (k >= ops_of_kind[kind].size()) return fmt::format("{} #{} in the CHECK lines, not in the input", kind, k + 1);
      const ir::Op* op = ops_of_kind[kind][k];
      std::vector<ir::Sharding> printed;
      if (size_t at = line.find("sharding_per_value<["); at != std::string::npos)
        for (size_t r = 0; r < op->num_results(); ++r) {
          std::string s = sharding_text(line, at + 1);
          if (s.empty()) break;
          printed.push_back(shardy_text::parse_sharding(meshes, op->result(r)->type(), s));
          at = line.find(s, at) + s.size();
        }
      const ir::ShardingList* own = op->attrs().find<ir::ShardingList>("sdy.sharding");
      std::vector<Known> results;
      for (size_t r = 0; r < op->num_results(); ++r) {
        Known v{op->result(r)->type(), std::nullopt};
        if (r < printed.size()) v.sharding = printed[r];
        else if (own && r < own->size()) v.sharding = (*own)[r];
        for (const std::string& n : names) values[op->num_results() == 1 ? n : n + "#" + std::to_string(r)] = v;
        results.push_back(v);
      }
      // The op itself, run by Tessera at Shardy's layouts: its operands as the CHECK line names
      // them, its results as printed and partial along the axes a later all_reduce of them sums.
      // What that moves, the CHECK lines leave out (an all_reduce a CHECK line that matches only
      // the start of the op's line does not show), and Shardy's program needs it too.
      std::vector<std::optional<ir::Sharding>> in;
      {
        std::string rest = line.substr(static_cast<size_t>(m.position(0) + m.length(0)));
        rest = rest.substr(0, rest.find(" {"));
        std::regex operand(R"(%(?:\[\[([A-Za-z0-9_]+)\]\]|([A-Za-z0-9_]+))(?:#(\d+))?)");
        std::vector<std::optional<ir::Sharding>> inits;  // reduce's (%x init: %y), ...: the inits come last
        for (auto it = std::sregex_iterator(rest.begin(), rest.end(), operand); it != std::sregex_iterator(); ++it) {
          const std::smatch& o = *it;
          std::string n = o[1].matched ? o[1].str() : o[2].str();
          if (o[3].matched) n += "#" + o[3].str();
          auto v = values.find(n);
          std::optional<ir::Sharding> layout = v == values.end() ? std::nullopt : v->second.sharding;
          const size_t at = static_cast<size_t>(o.position(0));
          const bool init = at >= 7 && rest.compare(at - 7, 7, " init: ") == 0;
          (init ? inits : in).push_back(layout);
        }
        in.insert(in.end(), inits.begin(), inits.end());
      }
      if (!names.empty())
        for (size_t later = l + 1; later < lines.size(); ++later) {
          std::smatch a;
          if (!std::regex_search(lines[later], a, move) || a[1] != "all_reduce") continue;
          const std::string source = a[3].matched ? a[3].str() : a[4].str();
          if (std::find(names.begin(), names.end(), source) == names.end()) continue;
          size_t r = a[5].matched ? std::stoul(a[5].str()) : 0;
          if (r < results.size() && results[r].sharding)
            for (const ir::AxisRef& x : shardy_text::axes_in(a[2])) results[r].sharding->unreduced.push_back(x);
        }
      int64_t extra = op_bytes(module, *op, in, results);
      if (extra > 0) {
        e.bytes += extra;
        e.moves.push_back(fmt::format("{} at Shardy's layouts, moves the CHECK lines leave out: {} B", kind, extra));
      }
    }
  }
  // The input's ops no CHECK line shows (Shardy kept them as they are: a CHECK-NOT: sdy.reshard
  // says as much) run at the input's layouts; what Tessera moves to run each alone there (a slice
  // of a split dimension needs rows other devices hold) is left out of the CHECK lines too.
  auto declared = [&](const ir::Value* v) -> std::optional<ir::Sharding> {
    const ir::Op* def = v->defining_op();
    if (def == nullptr) return fn.arg_sharding(static_cast<size_t>(v->index()));
    const ir::ShardingList* list = def->attrs().find<ir::ShardingList>("sdy.sharding");
    if (list && static_cast<size_t>(v->index()) < list->size()) return (*list)[static_cast<size_t>(v->index())];
    return std::nullopt;
  };
  for (const auto& [kind, ops] : ops_of_kind)
    for (size_t k = seen[kind]; k < ops.size(); ++k) {
      const ir::Op& op = *ops[k];
      if (op.kind() == ir::OpKind::Return || op.kind() == ir::OpKind::Constant || op.num_results() == 0) continue;
      std::vector<std::optional<ir::Sharding>> in;
      for (const ir::Value* v : op.operands()) in.push_back(declared(v));
      std::vector<Known> out;
      for (const ir::Value* r : op.results()) out.push_back(Known{r->type(), declared(r)});
      if (int64_t extra = op_bytes(module, op, in, out); extra > 0) {
        e.bytes += extra;
        e.moves.push_back(fmt::format("{} (no CHECK line) at the input's layouts: {} B", kind, extra));
      }
    }
  // Without a CHECK line for the return, a function of one result returns the last value the
  // CHECK lines define.
  if (!returned && fn.result_types.size() == 1 && !last_defined.empty()) returns("%" + last_defined);
  return e;
}

// The functions docs/CONFORMANCE.md lists as moving more than Shardy's expected reshards, with
// Tessera's and Shardy's bytes per device: | `file @function` | Tessera | Shardy | why |.
std::map<std::string, std::pair<int64_t, int64_t>> listed_as_more() {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  std::istringstream lines(shardy_text::read(std::string(TESSERA_SOURCE_DIR) + "/docs/CONFORMANCE.md"));
  std::regex row(R"(^\| `([a-z_]+\.mlir @[A-Za-z0-9_]+)` \| (\d+) \| (\d+) \|)");
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) out[m[1]] = {std::stoll(m[2]), std::stoll(m[3])};
  }
  return out;
}

TEST(ShardyExplicitReshards, TesseraMovesNoMoreBytesThanShardy) {
  std::map<std::string, std::pair<int64_t, int64_t>> known = listed_as_more();
  const std::string folder = std::string(TESSERA_CONFORMANCE_DIR) + "/shardy-tests/insert_explicit_reshards";
  ASSERT_TRUE(std::filesystem::is_directory(folder)) << folder;
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(folder))
    if (f.path().extension() == ".mlir") files.push_back(f.path().string());
  std::sort(files.begin(), files.end());

  int compared = 0, same = 0, fewer = 0;
  std::vector<std::string> more, skipped;
  double slowest_ms = 0;
  std::string slowest;
  for (const std::string& path : files) {
    const std::string text = shardy_text::read(path);
    const std::string meshes = shardy_text::meshes(text);
    const std::map<std::string, std::vector<std::string>> checks = check_lines(text);
    const std::string file = std::filesystem::path(path).filename().string();
    for (const std::string& source : shardy_text::functions(text)) {
      std::unique_ptr<ir::Module> module;
      try {
        module = stablehlo::parse(meshes + source, path);
      } catch (const std::exception& e) {
        skipped.push_back(fmt::format("{}: {}", file, std::string(e.what()).substr(0, 160)));
        continue;
      }
      const ir::Function& fn = *module->functions.at(0);
      const std::string where = fmt::format("{} @{}", file, fn.name());
      if (!checks.contains(fn.name())) {
        skipped.push_back(where + ": no CHECK-LABEL");
        continue;
      }
      spmd::Report scratch;
      int64_t devices = 1;
      for (const auto& m : module->meshes)
        if (!spmd::is_maximal(m)) devices = std::max(devices, m.num_devices());
      spmd::LocalContext ctx{*module, devices, scratch, "", {}, false, ""};
      std::variant<Expected, std::string> theirs;
      try {
        theirs = shardy_bytes(*module, fn, checks.at(fn.name()), meshes, ctx);
      } catch (const std::exception& e) {
        theirs = std::string(e.what()).substr(0, 160);
      }
      if (const std::string* why = std::get_if<std::string>(&theirs)) {
        skipped.push_back(where + ": " + *why);
        continue;
      }
      const Expected& expected = std::get<Expected>(theirs);
      ir::Module local("local");
      auto t0 = std::chrono::steady_clock::now();
      spmd::Partitioned p;
      try {
        p = spmd::partition(*module, fn, local);
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << ": Tessera does not partition it: " << e.what();
        continue;
      }
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (ms > slowest_ms) slowest_ms = ms, slowest = where;
      const int64_t ours = p.report.bytes_per_device();
      ++compared;
      std::string line = fmt::format("{}: Tessera {} B, Shardy {} B per device ({} moves; partitioned in {:.1f} ms)",
                                     where, ours, expected.bytes, expected.moves.size(), ms);
      std::cout << line << "\n";
      auto listed = known.find(where);
      if (listed != known.end()) {
        // Listed: it must still move more, exactly as the list says (the list can only shrink).
        EXPECT_EQ(listed->second, std::make_pair(ours, expected.bytes))
            << line << ": docs/CONFORMANCE.md lists it as Tessera " << listed->second.first << " B, Shardy "
            << listed->second.second << " B";
        known.erase(listed);
        more.push_back(where);
      } else if (ours > expected.bytes) {
        more.push_back(where);
        ADD_FAILURE() << line << "\nShardy's moves:\n  " << fmt::format("{}", fmt::join(expected.moves, "\n  "))
                      << "\nTessera's:\n" << p.report.to_string();
      } else if (ours < expected.bytes) {
        ++fewer;
        std::cout << "less: " << line << "\n";
      } else {
        ++same;
      }
    }
  }
  std::cout << compared << " functions compared: " << same << " move the same bytes as Shardy's expected reshards, "
            << fewer << " fewer, " << more.size() << " more (docs/CONFORMANCE.md lists why); slowest to partition "
            << slowest << " (" << fmt::format("{:.1f}", slowest_ms) << " ms)\n";
  for (const std::string& m : more) std::cout << "  more: " << m << "\n";
  std::cout << skipped.size() << " not compared:\n";
  for (const std::string& s : skipped) std::cout << "  " << s << "\n";
  for (const auto& [where, bytes] : known)
    ADD_FAILURE() << where << ": listed in docs/CONFORMANCE.md as moving more, but not compared";
  EXPECT_GE(compared, 130) << "the files' functions stopped parsing or their CHECK lines stopped reading";
}

}  // namespace
}  // namespace tessera
