// Helpers of the halo-exchange tests (split_reads_test.cpp, halo_conv_test.cpp): a program run
// sharded and unsharded with its results compared (a comparison that fails on NaN), and what one
// op's collectives moved.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "stablehlo/printer.h"

namespace tessera::spmd::halo_test {

using namespace tessera::ir;

inline constexpr double kTolerance = 1e-5;  // relative, sharded vs unsharded (DESIGN.md §2)

// Fails on NaN on either side: a NaN is never within the tolerance.
inline bool close(double a, double b) { return std::abs(a - b) <= kTolerance * (1 + std::abs(b)); }

inline Sharding on(std::vector<DimSharding> dims) { return Sharding{"m", std::move(dims), {}, {}}; }

// Bytes moved per device for the ops named `op`, and the all_gathers of their operand 0.
struct Moved {
  int64_t bytes = 0, gathers = 0;
  std::map<std::string, int> kinds;
};

// Builds @f on `mesh` from `body`, runs it sharded and unsharded on `in`, expects equal results
// and returns what the op named `op` moved.
inline Moved run(const Mesh& mesh, const std::function<Tensor(FunctionBuilder&)>& body, const std::vector<Literal>& in,
          const std::string& op, bool expect_no_warning = true, std::optional<Sharding> result = std::nullopt) {
  Module m("case");
  m.add_mesh(mesh);
  Function& f = build_function(m, "f", body);
  if (result) f.set_result_sharding(0, *result);
  std::vector<Literal> want = interp::evaluate(m, "f", in);
  runtime::Session s = runtime::Session::host(mesh.num_devices());
  spmd::PartitionOptions options;
  runtime::CompiledProgram p = s.compile(m, "f", options);
  std::vector<Literal> got = s.run_sharded(p, in);
  std::string text = stablehlo::print(m);
  EXPECT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size() && r < want.size(); ++r)
    for (int64_t i = 0; i < want[r].num_elements(); ++i)
      if (!close(got[r].get_double(i), want[r].get_double(i))) {
        ADD_FAILURE() << "element " << i << ": sharded " << got[r].get_double(i) << ", unsharded "
                      << want[r].get_double(i) << "\n" << text << p.report().to_string();
        return {};
      }
  Moved moved;
  for (const auto& c : p.report().collectives) {
    if (c.origin.rfind(op, 0) != 0) continue;
    moved.bytes += c.bytes_per_device;
    moved.gathers += c.kind == "all_gather" && c.forced_by.rfind("operand 0", 0) == 0;
    ++moved.kinds[c.kind];
  }
  if (expect_no_warning) {
    EXPECT_TRUE(p.report().warnings().empty()) << p.report().explain();
  }
  return moved;
}

inline Literal arange(Type t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) + 0.5;
  return Literal::from_doubles(std::move(t), v);
}

// The layouts the pad and concatenate cases run on: even and uneven pieces, 1-D and 2-D meshes,
// axes in mesh order and not, a sub-axis.
struct HaloLayout {
  std::vector<MeshAxis> mesh;
  DimSharding axes;
  int64_t shards;
};
inline const std::vector<HaloLayout> kHaloLayouts = {
    {{{"x", 4}}, {"x"}, 4},
    {{{"x", 2}, {"y", 2}}, {"y", "x"}, 4},
    {{{"x", 8}}, {AxisRef("x", SubAxis{2, 4})}, 4},
    {{{"x", 3}}, {"x"}, 3},
    {{{"x", 2}, {"y", 4}}, {"x", "y"}, 8},
};

}  // namespace tessera::spmd::halo_test
