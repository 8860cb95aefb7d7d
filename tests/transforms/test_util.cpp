#include "test_util.h"

#include <gtest/gtest.h>

#include <sstream>

#include "interp/interpreter.h"
#include "stablehlo/printer.h"
#include "transforms/simplify.h"

namespace tessera::transforms::testing {

std::string body_of(const ir::Module& m, const std::string& name) {
  std::istringstream in(stablehlo::print(m));
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line.find("func.func public @" + name + "(") != std::string::npos;
      continue;
    }
    if (line == "  }") break;
    out += (line.rfind("    ", 0) == 0 ? line.substr(4) : line) + "\n";
  }
  return out;
}

std::string simplified(const Body& body) {
  ir::Module m("t");
  m.add_mesh({"m", {{"x", 2}, {"y", 2}}, {}});
  ir::Function& f = ir::build_function(m, "f", body);
  simplify(f);
  ir::verify(m);
  return body_of(m, "f");
}

std::vector<ir::Literal> sample_inputs(const ir::Function& f, uint32_t seed) {
  std::vector<ir::Literal> args;
  uint32_t state = seed * 2654435761u + 1;
  for (size_t p = 0; p < f.num_parameters(); ++p) {
    ir::Literal l(f.parameter(p)->type());
    for (int64_t i = 0; i < l.num_elements(); ++i) {
      state = state * 1664525u + 1013904223u;
      double u = static_cast<double>(state >> 8) / static_cast<double>(1u << 24);  // [0, 1)
      if (ir::is_float(l.element()) || ir::is_complex(l.element()))
        l.set_double(i, 4 * u - 2);
      else
        l.set_int(i, static_cast<int64_t>(16 * u) - 8);
    }
    args.push_back(std::move(l));
  }
  return args;
}

std::pair<size_t, size_t> expect_same_results(ir::Module& m, const std::string& name) {
  ir::Function& f = *m.find_function(name);
  size_t before_ops = f.body().ops().size();
  std::vector<std::vector<ir::Literal>> before;
  for (uint32_t seed = 1; seed <= 3; ++seed)
    before.push_back(interp::evaluate(m, name, sample_inputs(f, seed)));
  simplify(f);
  ir::verify(m);
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    std::vector<ir::Literal> after = interp::evaluate(m, name, sample_inputs(f, seed));
    EXPECT_EQ(after.size(), before[seed - 1].size());
    for (size_t i = 0; i < after.size() && i < before[seed - 1].size(); ++i)
      EXPECT_TRUE(after[i] == before[seed - 1][i]) << "@" << name << " result " << i << " seed " << seed;
  }
  return {before_ops, f.body().ops().size()};
}

}  // namespace tessera::transforms::testing
