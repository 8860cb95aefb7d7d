// Property test of the partitioner: random programs (chains of 5-30 ops drawn from the op table)
// with random shardings on meshes of 2, 4 and 8 devices (1-D and 2-D, sub-axes, uneven
// dimensions) give the same results on host devices as the single-device interpreter. Each case
// has its own seed; a failure prints the seed and the program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

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

struct Gen {
  std::mt19937 rng;
  Mesh mesh;

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng); }

  // Every way to name a slice of the mesh: whole axes and, for axes of 4 or more, sub-axes.
  std::vector<AxisRef> refs() const {
    std::vector<AxisRef> out;
    for (const auto& a : mesh.axes) {
      out.emplace_back(a.name);
      if (a.size >= 4) {
        out.emplace_back(a.name, SubAxis{1, 2});
        out.emplace_back(a.name, SubAxis{2, a.size / 2});
      }
    }
    return out;
  }

  Sharding random_sharding(size_t rank) {
    Sharding s{mesh.name, std::vector<DimSharding>(rank), {}, {}};
    std::vector<AxisRef> used;
    for (auto& d : s.dims) {
      if (coin(0.4)) continue;
      int n = 1 + pick(2);
      for (int k = 0; k < n; ++k) {
        auto all = refs();
        const AxisRef& r = all[static_cast<size_t>(pick(static_cast<int>(all.size())))];
        bool clash = false;
        for (const auto& u : used)
          if (u.name == r.name) clash = true;  // one use of an axis (or part of it) per tensor
        if (clash) continue;
        used.push_back(r);
        d.axes.push_back(r);
      }
    }
    return s;
  }

  std::vector<int64_t> random_shape() {
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 8};
    std::vector<int64_t> s(static_cast<size_t>(1 + pick(3)));
    for (auto& d : s) d = sizes[pick(7)];
    return s;
  }
};

// One random program: parameters with random shardings, then a chain of ops on the newest value.
void build_case(Module& m, Gen& g, int length) {
  build_function(m, "f", [&](FunctionBuilder& f) {
    auto param = [&](const std::vector<int64_t>& shape) {
      return f.param(f32(shape), g.coin(0.8) ? std::optional<Sharding>(g.random_sharding(shape.size())) : std::nullopt);
    };
    Tensor x = param(g.random_shape());
    std::vector<Tensor> outs;
    for (int step = 0; step < length; ++step) {
      const auto shape = x.shape();
      size_t rank = shape.size();
      switch (g.pick(18)) {
        case 0: x = tanh(x); break;
        case 1: x = x * param(shape) + 0.5; break;
        case 2: x = maximum(x, param(shape)) - x; break;
        case 3: {  // transpose
          std::vector<int64_t> perm(rank);
          for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
          std::shuffle(perm.begin(), perm.end(), g.rng);
          x = transpose(x, perm);
          break;
        }
        case 4: {  // reshape: merge two dims or split one
          if (rank >= 2 && g.coin()) {
            size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank - 1)));
            std::vector<int64_t> s;
            for (size_t i = 0; i < rank; ++i) {
              if (i == d + 1) continue;
              s.push_back(i == d ? shape[d] * shape[d + 1] : shape[i]);
            }
            x = reshape(x, s);
          } else if (rank < 4) {
            size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
            if (shape[d] % 2 == 0 && shape[d] > 2) {
              std::vector<int64_t> s = shape;
              s[d] = 2;
              s.insert(s.begin() + static_cast<ptrdiff_t>(d) + 1, shape[d] / 2);
              x = reshape(x, s);
            }
          }
          break;
        }
        case 5:
          if (rank >= 2) x = reduce_sum(x, {g.pick(static_cast<int>(rank))});
          break;
        case 6: {  // contract the last dimension with a new weight
          int64_t k = shape.back(), n = 1 + g.pick(5);
          Tensor w = param({k, n});
          DotDims dd{{}, {}, {static_cast<int64_t>(rank) - 1}, {0}};
          x = dot_general(x, w, dd);
          break;
        }
        case 7:
          if (rank < 4) {
            std::vector<int64_t> s = shape, dims;
            s.insert(s.begin(), 3);
            for (size_t i = 0; i < rank; ++i) dims.push_back(static_cast<int64_t>(i) + 1);
            x = broadcast_in_dim(x, s, dims);
          }
          break;
        case 8: {  // slice a dimension
          size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
          if (shape[d] < 2) break;
          std::vector<int64_t> start(rank, 0), limit = shape;
          start[d] = g.pick(static_cast<int>(shape[d]) - 1);
          limit[d] = start[d] + 1 + g.pick(static_cast<int>(shape[d] - start[d]));
          x = slice(x, start, limit);
          break;
        }
        case 9: {  // pad a dimension
          size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
          std::vector<int64_t> lo(rank, 0), hi(rank, 0);
          lo[d] = g.pick(3);
          hi[d] = g.pick(3) - (shape[d] > 1 ? 1 : 0);
          x = pad(x, x.builder().scalar(ElementType::f32, 0.25), lo, hi);
          break;
        }
        case 10: x = concatenate({x, negate(x)}, g.pick(static_cast<int>(rank))); break;
        case 11: x = reverse(x, {g.pick(static_cast<int>(rank))}); break;
        case 12: x = constrain(x, g.random_sharding(rank)); break;
        case 13:
          x = x + convert(x.builder().iota(i32(shape), g.pick(static_cast<int>(rank))), ElementType::f32) * 0.125;
          break;
        case 14: x = select(compare(x, x.builder().scalar(ElementType::f32, 0) + x * 0.0, ComparisonDirection::GT), x, x * 0.5); break;
        case 15:
          if (rank >= 2) x = reduce_max(x, {g.pick(static_cast<int>(rank))});
          break;
        case 16:
          if (rank >= 2) {  // batched contraction over the first dimension
            int64_t n = 1 + g.pick(4);
            Tensor w = param({shape[0], shape[rank - 1], n});
            DotDims dd{{0}, {0}, {static_cast<int64_t>(rank) - 1}, {1}};
            x = dot_general(x, w, dd);
          }
          break;
        case 17: {  // dynamic_slice from a constant start
          size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
          if (shape[d] < 2) break;
          std::vector<Tensor> start;
          for (size_t i = 0; i < rank; ++i)
            start.push_back(x.builder().scalar(ElementType::i32, i == d ? 1 : 0));
          std::vector<int64_t> sizes = shape;
          sizes[d] = shape[d] - 1;
          x = dynamic_slice(x, start, sizes);
          break;
        }
      }
      if (x.type().num_elements() > 4096) x = reduce_sum(x, {0});
      if (g.coin(0.1)) outs.push_back(x);
    }
    outs.push_back(x);
    return outs;
  });
}

Literal random_input(const Type& t, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = u(rng);
  return Literal::from_doubles(t, v);
}

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
      build_case(m, g, 5 + g.pick(26));
      text = stablehlo::print(m);
      const Function& f = *m.find_function("f");
      std::vector<Literal> in;
      for (size_t i = 0; i < f.num_parameters(); ++i) in.push_back(random_input(f.parameter(i)->type(), g.rng));
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
