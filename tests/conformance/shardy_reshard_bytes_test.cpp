// Bytes moved by a reshard, Tessera's choice against Shardy's (issue #18 item 4): for every case of
// Shardy's reshard_to_collectives.mlir that reshards a function argument once (an `sdy.reshard`
// from the argument's sharding to another), the collectives Shardy's CHECK lines expect are costed
// with the accounting of our partition report (nccl-tests': an all_gather moves what a device
// receives, an all_to_all (n-1)/n of its operand, a collective_permute its operand, an all_slice
// nothing), and compared with what Tessera's partitioner records for the same function.
//
// A case where Tessera moves more fails, unless the test shows that Shardy's expected collectives
// do not move the data their layouts name: each of them is checked against the layouts, on the
// real elements (padding of uneven pieces excluded) of each device's piece, as this file computes
// them (an all_slice keeps part of the device's own piece; an all_gather or all_to_all takes only
// what the devices of its group hold; a collective_permute sends one device's whole piece). Where
// a step needs an element no device it may read from holds, the sequence is no correct exchange
// of the padded layouts, and its byte count no bound: such a case is reported with the bytes a
// correct exchange must receive at least (the most real elements of one device's target piece
// that its source piece lacks), and Tessera must stay within twice that. Tessera below that
// least amount fails too (its accounting would be wrong). Cases where Tessera moves less are
// printed.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "ir/module.h"
#include "spmd/mesh_math.h"
#include "spmd/partition.h"
#include "stablehlo/parser.h"
#include "shardy_text.h"

namespace tessera {
namespace {

using shardy_text::axes_in;
using shardy_text::parse_sharding;

struct ShardyOp {
  std::string kind;      // all_gather, all_slice, all_to_all, collective_permute, ...
  std::string moved;     // all_to_all: the axes list between [{ and }:
  std::string sharding;  // the out_sharding text: <@mesh, [...]>
  std::string axes;      // the op's axes (all_gather's, all_slice's, all_to_all's), as written
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
      std::string middle = m[2];
      ShardyOp o{m[1], "", m[3], middle.substr(0, middle.find('%'))};
      if (!o.sharding.ends_with(">")) o.sharding += ">";
      std::smatch mm;
      if (std::regex_search(middle, mm, moved)) o.moved = mm[1];
      out[current].push_back(o);
    } else if (!current.empty() && std::regex_search(line, kept)) {
      out[current].push_back(ShardyOp{"reshard", "", "", ""});  // Shardy leaves it to a later pass
    }
  }
  return out;
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

// The real elements of each device's piece (padding of uneven pieces excluded), by device id.
struct Box {
  std::vector<int64_t> lo, hi;
  int64_t count() const {
    int64_t n = 1;
    for (size_t d = 0; d < lo.size(); ++d) n *= std::max<int64_t>(0, hi[d] - lo[d]);
    return n;
  }
  bool holds(const std::vector<int64_t>& e) const {
    for (size_t d = 0; d < lo.size(); ++d)
      if (e[d] < lo[d] || e[d] >= hi[d]) return false;
    return true;
  }
  Box meet(const Box& o) const {
    Box b = *this;
    for (size_t d = 0; d < lo.size(); ++d) b.lo[d] = std::max(lo[d], o.lo[d]), b.hi[d] = std::min(hi[d], o.hi[d]);
    return b;
  }
};

std::map<int64_t, Box> boxes(const ir::Mesh& mesh, const ir::Sharding& s, const std::vector<int64_t>& shape) {
  std::map<int64_t, Box> out;
  for (int64_t p = 0; p < mesh.num_devices(); ++p) {
    Box b;
    for (size_t d = 0; d < shape.size(); ++d) {
      const std::vector<ir::AxisRef> none;
      const std::vector<ir::AxisRef>& axes = d < s.dims.size() ? s.dims[d].axes : none;
      int64_t piece = spmd::piece_size(shape[d], spmd::shard_count(mesh, axes));
      b.lo.push_back(std::min(shape[d], spmd::shard_index(mesh, p, axes) * piece));
      b.hi.push_back(std::min(shape[d], b.lo.back() + piece));
    }
    out[spmd::device_at(mesh, p)] = b;
  }
  return out;
}

// Calls f on every element of b until it returns false; whether it never did.
bool every_element(const Box& b, const std::function<bool(const std::vector<int64_t>&)>& f) {
  if (b.count() == 0) return true;
  std::vector<int64_t> e = b.lo;
  while (true) {
    if (!f(e)) return false;
    size_t d = e.size();
    while (d > 0 && ++e[d - 1] == b.hi[d - 1]) e[d - 1] = b.lo[d - 1], --d;
    if (d == 0) return true;
  }
}

// Where Shardy's step `o` from `in` to `out` needs an element no device it may read from holds:
// the first such device and element, or "" when the step moves the data its layouts name.
std::string unrealizable(const ir::Module& m, const ShardyOp& o, const ir::Sharding& in, const ir::Sharding& out,
                         const std::vector<int64_t>& shape) {
  if (!in.unreduced.empty() || !out.unreduced.empty() || o.kind == "all_reduce" || o.kind == "reduce_scatter") return "";
  const ir::Mesh& from_mesh = m.mesh(in.mesh);
  std::map<int64_t, Box> have = boxes(from_mesh, in, shape), want = boxes(m.mesh(out.mesh), out, shape);
  std::map<int64_t, std::vector<int64_t>> group;  // device -> the devices it may read from
  if (o.kind == "all_gather" || o.kind == "all_to_all")
    for (const std::vector<int64_t>& g : spmd::groups_over(from_mesh, axes_in(o.axes)))
      for (int64_t d : g) group[d] = g;
  for (const auto& [device, box] : want) {
    std::vector<int64_t> from;
    if (o.kind == "all_slice") from = {device};
    else if (group.contains(device)) from = group.at(device);
    bool ok = true;
    if (o.kind == "collective_permute") {
      ok = box.count() == 0 || std::any_of(have.begin(), have.end(), [&](const auto& h) {
        return h.second.meet(box).count() == box.count();
      });
    } else {
      std::vector<int64_t> missing;
      ok = every_element(box, [&](const std::vector<int64_t>& e) {
        for (int64_t f : from)
          if (have.at(f).holds(e)) return true;
        missing = e;
        return false;
      });
      if (!ok)
        return fmt::format("sdy.{} to {}: device {} needs element [{}], which no device of its group holds", o.kind,
                           o.sharding, device, fmt::join(missing, ", "));
    }
    if (!ok) return fmt::format("sdy.{} to {}: no device holds device {}'s whole piece", o.kind, o.sharding, device);
  }
  return "";
}

// The bytes a correct reshard must move at least: the most real elements of one device's target
// piece that its source piece lacks (each must reach it), in bytes.
int64_t least_bytes(const ir::Module& m, const ir::Type& type, const ir::Sharding& from, const ir::Sharding& to) {
  if (!from.unreduced.empty() || !to.unreduced.empty()) return 0;
  std::map<int64_t, Box> have = boxes(m.mesh(from.mesh), from, type.shape), want = boxes(m.mesh(to.mesh), to, type.shape);
  int64_t most = 0;
  for (const auto& [device, box] : want) {
    int64_t kept = have.contains(device) ? have.at(device).meet(box).count() : 0;
    most = std::max(most, box.count() - kept);
  }
  return most * spmd::byte_size(ir::Type(type.element, {}));
}

// The check of Shardy's steps is no check if it passes everything: a step that takes rows from
// outside its group, and an all_slice to rows the device does not hold, are caught.
TEST(ShardyReshards, TheStepCheckRejectsStepsThatCannotMoveTheirData) {
  const std::string text = "sdy.mesh @m = <[\"x\"=2, \"y\"=2]>\n";
  ir::Type type(ir::ElementType::f32, {8, 4});
  auto m = stablehlo::parse(text + "func.func @f(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {\n  return %a : tensor<8x4xf32>\n}\n", "<probe>");
  ir::Sharding rows_x = parse_sharding(text, type, "<@m, [{\"x\"}, {}]>");
  ir::Sharding rows_y = parse_sharding(text, type, "<@m, [{\"y\"}, {}]>");
  ir::Sharding whole = parse_sharding(text, type, "<@m, [{}, {}]>");
  EXPECT_EQ(unrealizable(*m, ShardyOp{"all_gather", "", "", "[{\"x\"}, {}]"}, rows_x, whole, type.shape), "");
  EXPECT_NE(unrealizable(*m, ShardyOp{"all_gather", "", "", "[{\"y\"}, {}]"}, rows_x, whole, type.shape), "");
  EXPECT_NE(unrealizable(*m, ShardyOp{"all_slice", "", "", "[{\"y\"}, {}]"}, rows_x, rows_y, type.shape), "");
  EXPECT_EQ(unrealizable(*m, ShardyOp{"collective_permute", "", "", ""}, rows_x, rows_y, type.shape), "");
  EXPECT_EQ(least_bytes(*m, type, rows_x, whole), 4 * 4 * 4);
}

TEST(ShardyReshards, TesseraMovesNoMoreBytesThanShardy) {
  const std::string path = std::string(TESSERA_CONFORMANCE_DIR) + "/shardy-tests/reshard_to_collectives/reshard_to_collectives.mlir";
  const std::string text = shardy_text::read(path);
  ASSERT_FALSE(text.empty()) << path;
  const std::string meshes = shardy_text::meshes(text);
  std::map<std::string, std::vector<ShardyOp>> shardy = expected_collectives(text);

  // Each function is parsed on its own (with the meshes), so one that does not parse cannot hide
  // the others.
  const std::vector<std::string> functions = shardy_text::functions(text);
  int compared = 0, better = 0, same = 0;
  std::vector<std::string> worse, skipped, unbound;
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
    std::string wrong;  // the first step of Shardy's that does not move the data its layouts name
    for (const ShardyOp& o : expected) {
      ir::Sharding out = parse_sharding(meshes, type, o.sharding);
      if (wrong.empty()) wrong = unrealizable(*module, o, in, out, type.shape);
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
    const int64_t least = least_bytes(*module, type, *fn->arg_sharding(0), reshard->attrs().get<ir::Sharding>("sharding"));
    ++compared;
    std::string line = fmt::format("@{}: Tessera {} B, Shardy {} B per device (partitioned in {:.1f} ms)", fn->name(), ours, theirs, ms);
    std::cout << line << "\n";
    EXPECT_GE(ours, least) << line << ": below the " << least << " B a device must receive";
    if (ours > theirs) {
      if (wrong.empty()) {
        worse.push_back(fn->name());
        ADD_FAILURE() << line << "\n" << p.report.to_string();
      } else {
        unbound.push_back(fmt::format("{}; a correct exchange receives at least {} B: {}", line, least, wrong));
        EXPECT_LE(ours, 2 * least) << line << ": more than twice the " << least << " B a device must receive";
      }
    } else {
      (ours < theirs ? better : same)++;
      if (ours < theirs) std::cout << "less: " << line << "\n";
    }
  }
  std::cout << compared << " reshards compared: " << same << " move the same bytes as Shardy's, " << better
            << " fewer, " << worse.size() << " more, " << unbound.size()
            << " more than Shardy's collectives that do not move the data:\n";
  for (const std::string& u : unbound) std::cout << "  " << u << "\n";
  std::cout << skipped.size() << " not compared:\n";
  for (const std::string& s : skipped) std::cout << "  " << s.substr(0, 200) << "\n";
  EXPECT_GE(compared, 80) << "the file's cases stopped parsing as single reshards";
}

}  // namespace
}  // namespace tessera
