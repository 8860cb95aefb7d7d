// Property test of the partitioner: random programs (chains of 5-30 ops drawn from the op table)
// with random shardings on meshes of 2, 4 and 8 devices (1-D and 2-D, sub-axes, uneven
// dimensions) give the same results on host devices as the single-device interpreter. Each case
// has its own seed; a failure prints the seed and the program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "common/random_programs.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "spmd/mesh_math.h"
#include "stablehlo/printer.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

constexpr double kTolerance = 1e-5;  // relative, sharded vs unsharded (DESIGN.md §2)
constexpr int kDefaultCases = 300;

// TESSERA_PROPERTY_CASES and TESSERA_PROPERTY_SEED widen a run by hand (e.g. 5000 cases).
int cases() {
  const char* n = std::getenv("TESSERA_PROPERTY_CASES");
  return n ? std::atoi(n) : kDefaultCases;
}
uint32_t first_seed() {
  const char* s = std::getenv("TESSERA_PROPERTY_SEED");
  return s ? static_cast<uint32_t>(std::atol(s)) : 1000;
}

using Gen = testing::ProgramGen;
using testing::uniform_input;

TEST(Property, RandomProgramsShardedEqualUnsharded) {
  const std::vector<std::vector<MeshAxis>> meshes = {
      {{"a", 2}}, {{"a", 4}}, {{"a", 8}}, {{"a", 2}, {"b", 2}}, {{"a", 2}, {"b", 4}}, {{"a", 4}, {"b", 2}}};
  int failures = 0, communicating = 0, uneven = 0;
  const int kCases = cases();
  for (int c = 0; c < kCases && failures < 5; ++c) {
    uint32_t seed = first_seed() + static_cast<uint32_t>(c);
    Gen g{std::mt19937(seed), {}};
    g.mesh = Mesh{"m", meshes[static_cast<size_t>(c) % meshes.size()], {}};
    Module m("case");
    m.add_mesh(g.mesh);
    std::string text;
    try {
      testing::build_sharded_program(m, g, 5 + g.pick(26));
      text = stablehlo::print(m);
      const Function& f = *m.find_function("f");
      std::vector<Literal> in;
      for (size_t i = 0; i < f.num_parameters(); ++i) in.push_back(uniform_input(f.parameter(i)->type(), g.rng));
      std::vector<Literal> want = interp::evaluate(m, "f", in);
      runtime::Session s = runtime::Session::host(g.mesh.num_devices());
      runtime::CompiledProgram p = s.compile(m, "f");
      std::vector<Literal> got = s.run_sharded(p, in);
      communicating += p.report().collectives.empty() ? 0 : 1;
      for (const auto& piece : p.report().parameters)
        uneven += is_uneven(piece.global.shape, piece.sharding, g.mesh) ? 1 : 0;
      ASSERT_EQ(got.size(), want.size());
      for (size_t r = 0; r < got.size(); ++r) {
        ASSERT_EQ(got[r].type(), want[r].type()) << "seed " << seed;
        for (int64_t i = 0; i < got[r].num_elements(); ++i) {
          double a = got[r].get_double(i), b = want[r].get_double(i);
          if (std::abs(a - b) > kTolerance * (1 + std::abs(b))) {
            ADD_FAILURE() << "seed " << seed << ": result " << r << " element " << i << ": sharded " << a
                          << ", unsharded " << b << "\n"
                          << text;
            ++failures;
            break;
          }
        }
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\n" << text;
      ++failures;
    }
  }
  // The cases exercise what they claim to: most communicate, and some split dimensions unevenly.
  EXPECT_GT(communicating, kCases / 3);
  EXPECT_GT(uneven, 10);
}

}  // namespace
}  // namespace tessera::spmd
