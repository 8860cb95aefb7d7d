// Bytes moved by a reshard, Tessera's choice against Shardy's (issue #18 item 4): for every case of
// Shardy's reshard_to_collectives.mlir that reshards a function argument once (an `sdy.reshard`
// from the argument's sharding to another), the collectives Shardy's CHECK lines expect are costed
// with the accounting of our partition report (nccl-tests': an all_gather moves what a device
// receives, an all_to_all (n-1)/n of its operand, a collective_permute its operand, an all_slice
// nothing), and compared with what Tessera's partitioner records for the same function.
//
// A case where Tessera moves more fails, unless docs/CONFORMANCE.md lists it under "Reshards that
// move more than Shardy's" (the list can only shrink: a listed case that no longer moves more
// fails too, so the list is kept true). Cases where Tessera moves less are printed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "ir/module.h"
#include "spmd/mesh_math.h"
#include "spmd/partition.h"
#include "stablehlo/parser.h"

namespace tessera {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The cases docs/CONFORMANCE.md lists as moving more than Shardy's collectives: "| `@name` | ...".
std::set<std::string> listed_worse() {
  std::string doc = read(std::string(TESSERA_SOURCE_DIR) + "/docs/CONFORMANCE.md");
  std::set<std::string> out;
  size_t at = doc.find("## Reshards that move more than Shardy's");
  if (at == std::string::npos) return out;
  std::istringstream lines(doc.substr(at));
  std::string line;
  std::getline(lines, line);
  std::regex row(R"(^\| `@([A-Za-z0-9_]+)` \|)");
  while (std::getline(lines, line) && !line.starts_with("## ")) {
    std::smatch m;
    if (std::regex_search(line, m, row)) out.insert(m[1]);
  }
  return out;
}

struct ShardyOp {
  std::string kind;      // all_gather, all_slice, all_to_all, collective_permute, ...
  std::string moved;     // all_to_all: the axes list between [{ and }:
  std::string sharding;  // the out_sharding text: <@mesh, [...]>
};

// The collectives Shardy expects in each function: CHECK lines from its CHECK-LABEL to the next.
std::map<std::string, std::vector<ShardyOp>> expected_collectives(const std::string& text) {
  std::map<std::string, std::vector<ShardyOp>> out;
  std::istringstream lines(text);
  std::string line, current;
  std::regex label(R"(CHECK-LABEL: func @([A-Za-z0-9_]+))");
  // (a CHECK line may stop before the sharding's closing '>': it matches a prefix)
  std::regex op(R"(CHECK.*sdy\.(all_gather|all_slice|all_to_all|collective_permute|all_reduce|reduce_scatter)(.*)out_sharding=(<@[^>]*>?))");
  std::regex kept(R"(CHECK.*= sdy\.reshard )");
  std::regex moved(R"(\[\{([^}]*)\}:)");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, label)) {
      current = m[1];
      out[current];
    } else if (!current.empty() && std::regex_search(line, m, op)) {
      ShardyOp o{m[1], "", m[3]};
      if (!o.sharding.ends_with(">")) o.sharding += ">";
      std::string middle = m[2];
      std::smatch mm;
      if (std::regex_search(middle, mm, moved)) o.moved = mm[1];
      out[current].push_back(o);
    } else if (!current.empty() && std::regex_search(line, kept)) {
      out[current].push_back(ShardyOp{"reshard", "", ""});  // Shardy leaves it to a later pass
    }
  }
  return out;
}

// A sharding written as Shardy prints an op's out_sharding, read by our parser (as an argument's).
ir::Sharding parse_sharding(const std::string& meshes, const ir::Type& type, const std::string& text) {
  std::string t = ir::to_string(type);
  std::string probe = meshes + "func.func @probe(%arg0: " + t + " {sdy.sharding = #sdy.sharding" + text + "}) -> " + t +
                      " {\n  return %arg0 : " + t + "\n}\n";
  auto m = stablehlo::parse(probe, "<probe>");
  return *m->find_function("probe")->arg_sharding(0);
}

int64_t local_bytes(const ir::Module& m, const ir::Type& type, const ir::Sharding& s) {
  std::vector<int64_t> shape = spmd::local_shape(type.shape, s, m.mesh(s.mesh));
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n * spmd::byte_size(ir::Type(type.element, {}));
}

// The group size of an all_to_all's moved axes: {"x", "z":(2)2} -> |x| * 2.
int64_t moved_size(const ir::Mesh& mesh, const std::string& axes) {
  int64_t n = 1;
  std::regex axis(R"re("([A-Za-z0-9_]+)"(:\((\d+)\)(\d+))?)re");
  for (auto it = std::sregex_iterator(axes.begin(), axes.end(), axis); it != std::sregex_iterator(); ++it) {
    const std::smatch& a = *it;
    if (a[2].matched) n *= std::stoll(a[4]);
    else
      for (const auto& ma : mesh.axes)
        if (ma.name == a[1]) n *= ma.size;
  }
  return n;
}

TEST(ShardyReshards, TesseraMovesNoMoreBytesThanShardy) {
  const std::string path = std::string(TESSERA_CONFORMANCE_DIR) + "/shardy-tests/reshard_to_collectives/reshard_to_collectives.mlir";
  const std::string text = read(path);
  ASSERT_FALSE(text.empty()) << path;
  std::string meshes;
  {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line))
      if (line.starts_with("sdy.mesh ")) meshes += line + "\n";
  }
  std::map<std::string, std::vector<ShardyOp>> shardy = expected_collectives(text);
  std::set<std::string> listed = listed_worse();

  // Each function is parsed on its own (with the meshes): a few use ops Tessera does not read
  // (sdy.propagation_barrier), which must not hide the others.
  std::vector<std::string> functions;
  {
    std::istringstream lines(text);
    std::string line, current;
    while (std::getline(lines, line)) {
      if (line.starts_with("func.func ")) current.clear();
      current += line + "\n";
      if (line == "}") functions.push_back(current);
    }
  }
  int compared = 0, better = 0, same = 0;
  std::vector<std::string> worse, skipped;
  for (const std::string& source : functions) {
    std::unique_ptr<ir::Module> module;
    try {
      module = stablehlo::parse(meshes + source, path);
    } catch (const std::exception& e) {
      skipped.push_back(e.what());
      continue;
    }
    const ir::Function* fn = module->functions.at(0).get();
    // The cases: one sdy.reshard of %arg0 (then the return).
    const ir::Op* reshard = nullptr;
    int ops = 0;
    for (const auto& op : fn->body().ops())
      if (op->kind() != ir::OpKind::Return && ++ops && op->kind() == ir::OpKind::Reshard) reshard = op.get();
    if (ops != 1 || reshard == nullptr || reshard->operand(0) != fn->parameter(0) || !fn->arg_sharding(0) ||
        !shardy.contains(fn->name())) {
      skipped.push_back(fn->name());
      continue;
    }
    const ir::Type& type = fn->parameter(0)->type();
    // Shardy's: each collective's input is the previous one's output, starting at the argument.
    ir::Sharding in = *fn->arg_sharding(0);
    int64_t theirs = 0;
    const std::vector<ShardyOp>& expected = shardy.at(fn->name());
    if (std::any_of(expected.begin(), expected.end(), [](const ShardyOp& o) { return o.kind == "reshard"; })) {
      skipped.push_back(fn->name() + " (Shardy keeps the reshard: no collectives to compare)");
      continue;
    }
    for (const ShardyOp& o : expected) {
      ir::Sharding out = parse_sharding(meshes, type, o.sharding);
      int64_t bin = local_bytes(*module, type, in), bout = local_bytes(*module, type, out);
      const ir::Mesh& mesh = module->mesh(out.mesh);
      if (o.kind == "all_gather") theirs += bout - bin;
      else if (o.kind == "all_to_all") {
        int64_t n = moved_size(mesh, o.moved);
        theirs += bin * (n - 1) / n;
      } else if (o.kind == "collective_permute") theirs += bin;
      else if (o.kind == "all_slice") theirs += 0;
      else ADD_FAILURE() << "@" << fn->name() << ": no cost for sdy." << o.kind;
      in = out;
    }
    // Ours.
    ir::Module local("local");
    auto t0 = std::chrono::steady_clock::now();
    spmd::Partitioned p = spmd::partition(*module, *fn, local);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    int64_t ours = p.report.bytes_per_device();
    ++compared;
    std::string line = fmt::format("@{}: Tessera {} B, Shardy {} B per device (partitioned in {:.1f} ms)", fn->name(), ours, theirs, ms);
    std::cout << line << "\n";
    if (ours > theirs) {
      worse.push_back(fn->name());
      if (!listed.contains(fn->name())) ADD_FAILURE() << line << " (not listed in docs/CONFORMANCE.md)\n" << p.report.to_string();
      else std::cout << "known: " << line << "\n";
    } else {
      (ours < theirs ? better : same)++;
      if (ours < theirs) std::cout << "less: " << line << "\n";
      if (listed.contains(fn->name()))
        ADD_FAILURE() << line << ": listed in docs/CONFORMANCE.md as moving more; take it off the list";
    }
  }
  std::cout << compared << " reshards compared: " << same << " move the same bytes as Shardy's, " << better
            << " fewer, " << worse.size() << " more; " << skipped.size() << " not compared:\n";
  for (const std::string& s : skipped) std::cout << "  " << s.substr(0, 200) << "\n";
  EXPECT_GE(compared, 80) << "the file's cases stopped parsing as single reshards";
}

}  // namespace
}  // namespace tessera
