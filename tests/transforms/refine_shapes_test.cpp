// Shape refinement: the JAX-style polymorphic program (tests/common/polymorphic_program.h) refined
// for batch sizes 2 and 5 is static, has no call, dynamic op, get_dimension_size or shape assertion
// left, verifies, and evaluates to 2x and iota(b); while loops carrying '?' values are refined
// through their bodies; and the errors name what stays unknown (a shape operand that is not a
// constant, an argument that does not fit, a bound exceeded, a failed assertion, an unrefined run).
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "common/polymorphic_program.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "test_util.h"
#include "transforms/refine_shapes.h"

namespace tessera::transforms::testing {
namespace {

using ir::Literal;
using tessera::testing::error_of;
using tessera::testing::kPolymorphicProgram;

Literal counting(const ir::Type& t) {
  Literal x(t);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, static_cast<double>(i) - 3);
  return x;
}

TEST(RefineShapes, APolymorphicJaxExportRunsAtTwoBatchSizes) {
  for (int64_t b : {2, 5}) {
    auto m = stablehlo::parse(kPolymorphicProgram, "poly.mlir");
    ASSERT_TRUE(has_dynamic_types(*m->find_function("main")));
    std::vector<ir::Type> types = {ir::f32({b, 4})};
    refine_shapes(*m, "main", types);
    ir::verify(*m);
    const ir::Function& f = *m->find_function("main");
    EXPECT_FALSE(has_dynamic_types(f));
    EXPECT_EQ(f.result_types, (std::vector<ir::Type>{ir::f32({b, 4}), ir::i32({b})}));
    std::string body = body_of(*m, "main");
    for (const char* gone : {"call", "dynamic_", "get_dimension_size", "shape_assertion"})
      EXPECT_EQ(body.find(gone), std::string::npos) << gone << " in\n" << body;
    EXPECT_NE(body.find(fmt::format("stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<{}x4xf32>", b)),
              std::string::npos)
        << body;
    EXPECT_NE(body.find(fmt::format("stablehlo.iota dim = 0 : tensor<{}xi32>", b)), std::string::npos) << body;
    EXPECT_NE(body.find(fmt::format("stablehlo.reshape %1 : (tensor<{}x4xf32>) -> tensor<{}x2xf32>", b, 2 * b)),
              std::string::npos)
        << body;
    // The refined module prints and reads back as it is.
    std::string printed = stablehlo::print(*m);
    EXPECT_EQ(stablehlo::print(*stablehlo::parse(printed, "refined.mlir")), printed);
    Literal x = counting(ir::f32({b, 4}));
    std::vector<Literal> r = interp::evaluate(*m, "main", {x});
    ASSERT_EQ(r[0].type(), ir::f32({b, 4}));
    for (int64_t i = 0; i < x.num_elements(); ++i) EXPECT_EQ(r[0].get_double(i), 2 * x.get_double(i));
    ASSERT_EQ(r[1].type(), ir::i32({b}));
    for (int64_t i = 0; i < b; ++i) EXPECT_EQ(r[1].get_int(i), i);
  }
}

TEST(RefineShapes, AFailedShapeAssertionIsJaxsMessageWithTheValues) {
  auto m = stablehlo::parse(kPolymorphicProgram, "poly.mlir");
  std::vector<ir::Type> types = {ir::f32({0, 4})};
  std::string e = error_of([&] { refine_shapes(*m, "main", types); });
  EXPECT_NE(e.find("shape assertion failed: Input shapes do not match the polymorphic shapes specification. "
                   "Expected value >= 1 for dimension variable 'b'. Obtained dimension variables: 'b' = 0 from "
                   "specification 'b' for dimension args[0].shape[0] (= 0), ."),
            std::string::npos)
      << e;
}

TEST(RefineShapes, ArgumentsMustFitTheParametersAndTheirBounds) {
  auto m = stablehlo::parse(kPolymorphicProgram, "poly.mlir");
  std::vector<ir::Type> wrong = {ir::f32({2, 3})};
  std::string e = error_of([&] { refine_shapes(*m, "main", wrong); });
  EXPECT_NE(e.find("refine_shapes: argument 0 of @main is tensor<2x3xf32>, which does not fit its parameter type "
                   "tensor<?x4xf32>"),
            std::string::npos)
      << e;
  auto bounded = stablehlo::parse(R"(
func.func @main(%a: tensor<?xf32, #stablehlo.bounds<4>>) -> tensor<?xf32, #stablehlo.bounds<4>> {
  return %a : tensor<?xf32, #stablehlo.bounds<4>>
}
)");
  std::vector<ir::Type> big = {ir::f32({5})};
  e = error_of([&] { refine_shapes(*bounded, "main", big); });
  EXPECT_NE(e.find("refine_shapes: argument 0 of @main is tensor<5xf32>: dimension 0 exceeds its bound 4 in "
                   "tensor<?xf32, #stablehlo.bounds<4>>"),
            std::string::npos)
      << e;
  std::vector<ir::Type> fits = {ir::f32({4})};
  refine_shapes(*bounded, "main", fits);
  EXPECT_EQ(bounded->find_function("main")->result_types, (std::vector<ir::Type>{ir::f32({4})}));
}

// A shape that depends on a value only known when running (not a dimension size) stays dynamic.
TEST(RefineShapes, AShapeOperandThatIsNotAConstantIsNamed) {
  auto m = stablehlo::parse(R"(
func.func @main(%n: tensor<1xi64>) -> tensor<?xi64> {
  %0 = stablehlo.dynamic_iota %n, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}
)");
  std::vector<ir::Type> types = {ir::i64({1})};
  std::string e = error_of([&] { refine_shapes(*m, "main", types); });
  EXPECT_NE(e.find("stablehlo.dynamic_iota (line 3): shape operand 0 is not a constant after refinement"),
            std::string::npos)
      << e;
}

TEST(RefineShapes, AnUnrefinedFunctionIsRefusedByTheInterpreterWithTheWayOut) {
  auto m = stablehlo::parse(kPolymorphicProgram, "poly.mlir");
  std::string e = error_of([&] { interp::evaluate(*m, "main", {counting(ir::f32({2, 4}))}); });
  EXPECT_NE(e.find("@main: parameter 0 has the dynamic type tensor<?x4xf32>: refine its shapes for the arguments "
                   "first"),
            std::string::npos)
      << e;
}

// A while loop over a '?' value: its carried values and body take the refined types.
TEST(RefineShapes, WhileLoopsAreRefinedThroughTheirBodies) {
  auto m = stablehlo::parse(R"(
func.func @main(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<?x2xf32>
   cond {
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %1 = stablehlo.compare  LT, %i, %c3,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.add %i, %c1 : tensor<i32>
    %2 = stablehlo.add %v, %v : tensor<?x2xf32>
    stablehlo.return %1, %2 : tensor<i32>, tensor<?x2xf32>
  }
  return %0#1 : tensor<?x2xf32>
}
)");
  std::vector<ir::Type> types = {ir::f32({3, 2})};
  refine_shapes(*m, "main", types);
  ir::verify(*m);
  EXPECT_FALSE(has_dynamic_types(*m->find_function("main")));
  Literal x = counting(ir::f32({3, 2}));
  std::vector<Literal> r = interp::evaluate(*m, "main", {x});
  ASSERT_EQ(r[0].type(), ir::f32({3, 2}));
  for (int64_t i = 0; i < x.num_elements(); ++i) EXPECT_EQ(r[0].get_double(i), 8 * x.get_double(i));
}

}  // namespace
}  // namespace tessera::transforms::testing

namespace tessera::transforms::testing {
namespace {

// jax2tf's polymorphic form: the dimension variable is argument 0 (tensor<i64>), and the shapes of
// the dynamic ops are built from it; a gather reads a '?'-sized operand (its slice sizes are checked
// against the dimension once it is known).
constexpr const char* kDimensionVariableProgram = R"(
module @jit_fun_flat_jax {
  func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?x3xf32>) -> tensor<?x3xf32> {
    %0 = stablehlo.constant dense<2> : tensor<i64>
    %1 = stablehlo.multiply %arg0, %0 : tensor<i64>
    %2 = stablehlo.convert %1 : (tensor<i64>) -> tensor<i32>
    %3 = stablehlo.reshape %2 : (tensor<i32>) -> tensor<1xi32>
    %4 = stablehlo.constant dense<3> : tensor<1xi32>
    %5 = stablehlo.concatenate %3, %4, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %6 = stablehlo.dynamic_iota %5, dim = 0 : (tensor<2xi32>) -> tensor<?x3xf32>
    %7 = stablehlo.constant dense<1> : tensor<1xi64>
    %8 = "stablehlo.gather"(%arg1, %7) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [0], start_index_map = [0]>, slice_sizes = array<i64: 1, 3>} : (tensor<?x3xf32>, tensor<1xi64>) -> tensor<3xf32>
    %9 = stablehlo.dynamic_broadcast_in_dim %8, %5, dims = [1] : (tensor<3xf32>, tensor<2xi32>) -> tensor<?x3xf32>
    %10 = stablehlo.add %6, %9 : tensor<?x3xf32>
    return %10 : tensor<?x3xf32>
  }
})";

TEST(RefineShapes, ADimensionVariableArgumentSizesTheDynamicOpsByItsValue) {
  for (int64_t b : {2, 3}) {
    auto m = stablehlo::parse(kDimensionVariableProgram, "dimvar.mlir");
    std::vector<Literal> args = {Literal::scalar(ir::ElementType::i64, static_cast<double>(b)),
                                 counting(ir::f32({b, 3}))};
    std::vector<ir::Type> types = {args[0].type(), args[1].type()};
    // Without its value, argument 0 is unknown and the iota's shape cannot be folded.
    {
      auto unvalued = stablehlo::parse(kDimensionVariableProgram, "dimvar.mlir");
      EXPECT_NE(error_of([&] { refine_shapes(*unvalued, "main", types); }).find("stablehlo.dynamic_iota (line 10): shape "
                                                                                 "operand 0 is not a constant"),
                std::string::npos);
    }
    refine_shapes(*m, "main", types, args);
    ir::verify(*m);
    const ir::Function& f = *m->find_function("main");
    EXPECT_FALSE(has_dynamic_types(f));
    ASSERT_EQ(f.result_types, (std::vector<ir::Type>{ir::f32({2 * b, 3})}));
    std::vector<Literal> r = interp::evaluate(*m, "main", args);
    // Row i is i + row 1 of the argument (counting: element k is k - 3).
    for (int64_t i = 0; i < 2 * b; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(r[0].get_double(i * 3 + j), static_cast<double>(i) + (3 + j - 3));
  }
}

TEST(RefineShapes, ArgumentValuesMustMatchTheirTypes) {
  auto m = stablehlo::parse(kDimensionVariableProgram, "dimvar.mlir");
  std::vector<ir::Type> types = {ir::i64({}), ir::f32({2, 3})};
  std::vector<Literal> one = {Literal::scalar(ir::ElementType::i64, 2)};
  EXPECT_NE(error_of([&] { refine_shapes(*m, "main", types, one); }).find("is given 1 argument values for 2 arguments"),
            std::string::npos);
  std::vector<Literal> wrong = {Literal::scalar(ir::ElementType::i32, 2), counting(ir::f32({2, 3}))};
  EXPECT_NE(error_of([&] { refine_shapes(*m, "main", types, wrong); })
                .find("argument 0 of @main is given a value of type tensor<i32>, not tensor<i64>"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::transforms::testing
