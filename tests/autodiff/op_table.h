// The table of differentiable op rows, shared by the tests of both modes: vjp_fd_test.cpp checks
// each row's reverse rule against central finite differences, jvp_test.cpp its forward rule against
// finite differences and against the reverse rule (the dot-product identity). A row builds
// op(params) from pseudo-random f64 parameters; inputs stay away from kinks: no ties for
// max/min/clamp, nothing near 0 for abs/sign/division, positive domains for log/sqrt/rsqrt and
// power's base. One table, so a row added here is checked by every test.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autodiff_test_util.h"

namespace tessera::autodiff::testing {

using Build = std::function<Tensor(ir::FunctionBuilder&, const std::vector<Tensor>&)>;

// A parameter: its shape and the interval its values are drawn from.
struct In {
  std::vector<int64_t> shape;
  double lo = -2, hi = 2;
  bool dyadic = false;
};

struct Row {
  std::string name;
  std::vector<OpKind> covers;  // the ops.def rows it checks (each must appear in f)
  std::vector<In> inputs;
  Build build;
  double step = 1e-6;  // finite-difference step
};

std::vector<Row> all_rows();
std::vector<Row> window_rows();  // op_table_window.cpp
std::vector<Row> branch_rows();  // op_table_branches.cpp
std::vector<Row> linalg_rows();  // op_table_linalg.cpp
std::vector<Row> effects_rows();  // op_table_effects.cpp
std::vector<Row> numeric_rows();  // op_table_numeric.cpp
void PrintTo(const Row& row, std::ostream* os);

// The row's parameter values (fixed per row).
std::vector<Literal> row_arguments(const Row& row);
// A module with the mesh the rows' shardings name.
ir::Module row_module(const std::string& name);
// Builds @name(params) = finish(the row's op output, converted to f64) in m.
const ir::Function& build_row(ir::Module& m, const std::string& name, const Row& row,
                              const std::vector<Literal>& args,
                              const std::function<Tensor(ir::FunctionBuilder&, Tensor)>& finish);

}  // namespace tessera::autodiff::testing
