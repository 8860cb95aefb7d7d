// Deterministic random arrays for tests: uniform values in [lo, hi] from a seed, in the element
// type asked for (rounded as it stores them), and one array per parameter of a function.
#pragma once

#include <random>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::testing {

inline ir::Literal random_literal(const ir::Type& t, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = u(rng);
  return ir::Literal::from_doubles(t, v);
}

// One random array per parameter of `f`, parameter i seeded with seed + i.
inline std::vector<ir::Literal> random_inputs(const ir::Function& f, uint64_t seed, double lo = -1, double hi = 1) {
  std::vector<ir::Literal> in;
  for (size_t i = 0; i < f.num_parameters(); ++i) in.push_back(random_literal(f.parameter(i)->type(), seed + i, lo, hi));
  return in;
}

}  // namespace tessera::testing
