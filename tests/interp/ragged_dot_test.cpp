// chlo.ragged_dot through text and the reference interpreter: its three modes on small inputs whose
// results are worked by hand (groups of the ragged dimension, a row or batch past the last group,
// an empty group); a batched form with per-batch group sizes against a plain loop written here;
// the generic text form as JAX prints it (#chlo.ragged_dot<...>, precision_config) read, printed
// and read back; and the constraint messages of CHLO's verifier.
#include <gtest/gtest.h>

#include <random>

#include "interp/interpreter.h"
#include "ir/ragged_dot.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace tessera::interp {
namespace {

using ir::Literal;

std::string program(const std::string& dims, const std::string& types, const std::string& lhs,
                    const std::string& rhs, const std::string& sizes) {
  // types: "(tensor<lhs>, tensor<rhs>, tensor<sizes>) -> tensor<result>"
  size_t arrow = types.find(" -> ");
  std::string in = types.substr(1, types.find(')') - 1), out = types.substr(arrow + 4);
  auto nth = [&](int i) {
    size_t at = 0;
    for (int k = 0; k < i; ++k) at = in.find(">, ", at) + 3;
    return in.substr(at, in.find('>', at) + 1 - at);
  };
  return "func.func @main() -> " + out + " {\n" +
         "  %a = stablehlo.constant dense<" + lhs + "> : " + nth(0) + "\n" +
         "  %b = stablehlo.constant dense<" + rhs + "> : " + nth(1) + "\n" +
         "  %s = stablehlo.constant dense<" + sizes + "> : " + nth(2) + "\n" +
         "  %0 = \"chlo.ragged_dot\"(%a, %b, %s) {ragged_dot_dimension_numbers = #chlo.ragged_dot<" + dims +
         ">, precision_config = [#chlo<precision DEFAULT>, #chlo<precision DEFAULT>]} : " + types + "\n" +
         "  return %0 : " + out + "\n}\n";
}

std::vector<double> run(const std::string& text) {
  auto m = stablehlo::parse(text, "t.mlir");
  Literal r = evaluate(*m, "main", {})[0];
  std::vector<double> v;
  for (int64_t i = 0; i < r.num_elements(); ++i) v.push_back(r.get_double(i));
  return v;
}

std::string error_of(const std::string& text) {
  try {
    auto m = stablehlo::parse(text, "t.mlir");
    evaluate(*m, "main", {});
  } catch (const support::UserError& e) {
    return e.what();
  }
  return "";
}

// Rows 0 | 1 2 | 3: row 0 uses rhs[0] (sum), rows 1 and 2 rhs[1] (difference), row 3 is in no group.
TEST(RaggedDot, RaggedRowsUseTheirGroupsRhs) {
  EXPECT_EQ(run(program("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], "
                        "lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]",
                        "(tensor<4x2xf32>, tensor<2x2x1xf32>, tensor<2xi64>) -> tensor<4x1xf32>",
                        "[[1, 2], [3, 4], [5, 6], [7, 8]]", "[[[1], [1]], [[1], [-1]]]", "[1, 2]")),
            (std::vector<double>{3, -1, -1, 0}));
  // Sizes past the dimension (their sum overflows int64) put every row in the first group.
  EXPECT_EQ(run(program("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], "
                        "lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]",
                        "(tensor<4x2xf32>, tensor<2x2x1xf32>, tensor<2xi64>) -> tensor<4x1xf32>",
                        "[[1, 2], [3, 4], [5, 6], [7, 8]]", "[[[1], [1]], [[1], [-1]]]",
                        "[4611686018427387904, 9223372036854775807]")),
            (std::vector<double>{3, 7, 11, 15}));
}

// k split 1 | 3 (then an empty group): result[g] contracts group g's part of k only.
TEST(RaggedDot, RaggedContractionGivesOneResultPerGroup) {
  EXPECT_EQ(run(program("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0], "
                        "lhs_ragged_dimensions = [1]",
                        "(tensor<1x4xf32>, tensor<4x2xf32>, tensor<3xi32>) -> tensor<3x1x2xf32>",
                        "[[1, 2, 3, 4]]", "[[1, 10], [1, 10], [1, 10], [1, 10]]", "[1, 3, 0]")),
            (std::vector<double>{1, 10, 9, 90, 0, 0}));
}

// Batches 0 and 1 in groups, batch 2 past them: zero.
TEST(RaggedDot, RaggedBatchZeroesBatchesPastTheGroups) {
  EXPECT_EQ(run(program("lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
                        "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1], "
                        "lhs_ragged_dimensions = [0]",
                        "(tensor<3x1x2xi32>, tensor<3x2x1xi32>, tensor<2xi32>) -> tensor<3x1x1xi32>",
                        "[[[1, 2]], [[3, 4]], [[5, 6]]]", "[[[1], [1]], [[1], [1]], [[1], [1]]]", "[1, 1]")),
            (std::vector<double>{3, 7, 0}));
}

// [b, m, k] x [g, b, k, n] with group sizes per batch ([b, g]), against a plain loop.
TEST(RaggedDot, PerBatchGroupSizesMatchAPlainLoop) {
  const int64_t B = 2, M = 5, K = 3, G = 3, N = 2;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  Literal lhs(ir::f64({B, M, K})), rhs(ir::f64({G, B, K, N}));
  for (int64_t i = 0; i < lhs.num_elements(); ++i) lhs.set_double(i, u(rng));
  for (int64_t i = 0; i < rhs.num_elements(); ++i) rhs.set_double(i, u(rng));
  std::vector<int64_t> sizes = {2, 1, 1, 0, 4, 3};  // batch 0: 2|1|1, row 4 in none; batch 1: 0|4|3 (past M)
  ir::Module m;
  ir::build_function(m, "main", [&](ir::FunctionBuilder& f) {
    ir::Tensor a = f.param(lhs.type());
    ir::Tensor b = f.param(rhs.type());
    return ir::ragged_dot(a, b, f.constant(Literal::from_ints(ir::i64({B, G}), sizes)),
                          ir::RaggedDotDims{{{0}, {1}, {2}, {2}}, {1}, {0}});
  });
  Literal got = evaluate(m, "main", {lhs, rhs})[0];
  ASSERT_EQ(got.shape(), (std::vector<int64_t>{B, M, N}));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t row = 0; row < M; ++row) {
      int64_t g = -1;
      for (int64_t i = 0, start = 0; i < G; start += sizes[static_cast<size_t>(b * G + i)], ++i)
        if (row >= start && row < start + sizes[static_cast<size_t>(b * G + i)]) g = i;
      for (int64_t n = 0; n < N; ++n) {
        double want = 0;
        for (int64_t k = 0; g >= 0 && k < K; ++k)
          want += lhs.get_double((b * M + row) * K + k) * rhs.get_double(((g * B + b) * K + k) * N + n);
        EXPECT_NEAR(got.get_double((b * M + row) * N + n), want, 1e-12) << b << " " << row << " " << n;
      }
    }
}

TEST(RaggedDot, GenericTextReadsPrintsAndReadsBack) {
  std::string text = program("lhs_batching_dimensions = [0], rhs_batching_dimensions = [1], "
                             "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2], "
                             "lhs_ragged_dimensions = [1], rhs_group_dimensions = [0]",
                             "(tensor<2x11x5xf32>, tensor<3x2x5x7xf32>, tensor<3xi64>) -> tensor<2x11x7xf32>",
                             "1.0", "2.0", "[4, 4, 3]");
  auto m = stablehlo::parse(text, "t.mlir");
  std::string once = stablehlo::print(*m);
  EXPECT_NE(once.find("#chlo.ragged_dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [1], "
                      "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2], "
                      "lhs_ragged_dimensions = [1], rhs_group_dimensions = [0]>"),
            std::string::npos)
      << once;
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(once, "again.mlir")), once);
  Literal r = evaluate(*m, "main", {})[0];
  EXPECT_EQ(r.get_double(0), 10.0);  // row 0 is in group 0: 5 products of 1 and 2
  EXPECT_EQ(r.get_double(2 * 11 * 7 - 1), 10.0);  // the last row, in group 2
}

TEST(RaggedDot, ConstraintMessages) {
  auto message = [](const std::string& dims, const std::string& types) {
    return error_of(program(dims, types, "1.0", "1.0", "1"));
  };
  EXPECT_NE(message("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], "
                    "lhs_ragged_dimensions = [0, 1], rhs_group_dimensions = [0]",
                    "(tensor<4x2xf32>, tensor<2x2x1xf32>, tensor<2xi64>) -> tensor<4x1xf32>")
                .find("exactly one ragged dimension in the lhs"),
            std::string::npos);
  EXPECT_NE(message("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0], lhs_ragged_dimensions = [0]",
                    "(tensor<4x2xf32>, tensor<2x1xf32>, tensor<2xi64>) -> tensor<4x1xf32>")
                .find("exactly one group dimension in the rhs when the lhs ragged dimension is non-contracting"),
            std::string::npos);
  EXPECT_NE(message("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], "
                    "lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]",
                    "(tensor<4x2xf32>, tensor<3x2x1xf32>, tensor<2xi64>) -> tensor<4x1xf32>")
                .find("rhs group dimension is expected to have size=2, got 3"),
            std::string::npos);
  EXPECT_NE(message("lhs_batching_dimensions = [0], rhs_batching_dimensions = [1], "
                    "lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [2], "
                    "lhs_ragged_dimensions = [2], rhs_group_dimensions = [0]",
                    "(tensor<19x17x11x5xf32>, tensor<3x19x5x7xf32>, tensor<19x11x3xi64>) -> tensor<19x17x11x7xf32>")
                .find("group_sizes is expected to have shape [19, 17, 3], got [19, 11, 3]"),
            std::string::npos);
  EXPECT_NE(message("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0], lhs_ragged_dimensions = [1], "
                    "rhs_group_dimensions = [1]",
                    "(tensor<1x4xf32>, tensor<4x2xf32>, tensor<3xi32>) -> tensor<3x1x2xf32>")
                .find("zero group dimensions in the rhs when the ragged dimension is batch or contracting"),
            std::string::npos);
  EXPECT_NE(message("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], "
                    "lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]",
                    "(tensor<4x2xf32>, tensor<2x3x1xf32>, tensor<2xi64>) -> tensor<4x1xf32>")
                .find("contracting dimension 1 of lhs has size 2, but dimension 1 of rhs has size 3"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::interp
