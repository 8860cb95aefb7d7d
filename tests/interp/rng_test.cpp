// stablehlo.rng_bit_generator and stablehlo.rng. The block functions against Random123's
// known-answer vectors (kat_vectors: Threefry2x32-20 and Philox4x32-10 with counter and key all
// zeros, all ones, and the digits of pi); the spec's THREE_FRY example, which XLA computed; XLA's
// packing of block words into 8-, 16-, 32- and 64-bit elements and its state updates (split shapes
// for 32-bit THREE_FRY, a 2-entry PHILOX state read reversed, a 128-bit counter that carries),
// against values worked out by a separate Python transcription of XLA's prng.cc; rng's ranges,
// moments and determinism; the pretty and generic forms; the shape rules' messages.
#include <gtest/gtest.h>

#include <cmath>

#include "interp/interpreter.h"
#include "interp/prng.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace tessera::interp {
namespace {

using ir::Literal;

std::vector<Literal> run_main(const std::string& text) { return evaluate(*stablehlo::parse(text, "t.mlir"), "main", {}); }

std::vector<uint64_t> uints(const Literal& l) {
  std::vector<uint64_t> v;
  for (int64_t i = 0; i < l.num_elements(); ++i) v.push_back(l.get_uint(i));
  return v;
}

std::string error_of(const std::string& text) {
  try {
    run_main(text);
  } catch (const support::UserError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Prng, BlockFunctionsMatchRandom123KnownAnswers) {
  using A2 = std::array<uint32_t, 2>;
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(prng::threefry2x32({0, 0}, {0, 0}), (A2{0x6b200159, 0x99ba4efe}));
  EXPECT_EQ(prng::threefry2x32({0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}), (A2{0x1cb996fc, 0xbb002be7}));
  EXPECT_EQ(prng::threefry2x32({0x243f6a88, 0x85a308d3}, {0x13198a2e, 0x03707344}), (A2{0xc4923a9c, 0x483df7a0}));
  EXPECT_EQ(prng::philox4x32({0, 0, 0, 0}, {0, 0}), (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(prng::philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(prng::philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RngBitGenerator, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> (tensor<2xui64>, tensor<2x2xui64>) {
  %initial_state = stablehlo.constant dense<[1, 2]> : tensor<2xui64>
  %output_state, %output = "stablehlo.rng_bit_generator"(%initial_state) {
    rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>
  } : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x2xui64>)
  return %output_state, %output : tensor<2xui64>, tensor<2x2xui64>
}
)");
  EXPECT_EQ(uints(r[0]), (std::vector<uint64_t>{1, 6}));
  EXPECT_EQ(uints(r[1]), (std::vector<uint64_t>{9236835810183407956u, 16087790271692313299u, 18212823393184779219u,
                                                2658481902456610144u}));
}

const std::string kPacking = R"(
func.func @main() -> (tensor<2xui64>, tensor<2x3xui32>, tensor<2xui64>, tensor<3xui32>, tensor<2xui64>, tensor<4xui8>,
                      tensor<3xui64>, tensor<6xui32>, tensor<2xui64>, tensor<3xui64>, tensor<2xui64>, tensor<5xui16>,
                      tensor<5xui16>, tensor<4xf32>, tensor<4xui32>) {
  %tf = stablehlo.constant dense<[5, 7]> : tensor<2xui64>
  %s0, %a = stablehlo.rng_bit_generator %tf, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui32>)
  %s1, %b = stablehlo.rng_bit_generator %tf, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui32>)
  %s2, %c = stablehlo.rng_bit_generator %tf, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui8>)
  %p3 = stablehlo.constant dense<[3, 18446744073709551615, 0]> : tensor<3xui64>
  %s3, %d = stablehlo.rng_bit_generator %p3, algorithm = PHILOX : (tensor<3xui64>) -> (tensor<3xui64>, tensor<6xui32>)
  %p2 = stablehlo.constant dense<[3, 10]> : tensor<2xui64>
  %s4, %e = stablehlo.rng_bit_generator %p2, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui64>)
  %s5, %f = stablehlo.rng_bit_generator %p2, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5xui16>)
  %s6, %g = stablehlo.rng_bit_generator %p2, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5xui16>)
  %s7, %h = stablehlo.rng_bit_generator %p2, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xf32>)
  %s8, %k = stablehlo.rng_bit_generator %p2, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
  return %s0, %a, %s1, %b, %s2, %c, %s3, %d, %s4, %e, %s5, %f, %g, %h, %k
    : tensor<2xui64>, tensor<2x3xui32>, tensor<2xui64>, tensor<3xui32>, tensor<2xui64>, tensor<4xui8>,
      tensor<3xui64>, tensor<6xui32>, tensor<2xui64>, tensor<3xui64>, tensor<2xui64>, tensor<5xui16>,
      tensor<5xui16>, tensor<4xf32>, tensor<4xui32>
}
)";

TEST(RngBitGenerator, PackingAndStateAsXlaDoes) {
  auto r = run_main(kPacking);
  ASSERT_EQ(r.size(), 15u);
  // THREE_FRY, 32 bits, 2x3: dimension 0 split in pairs, one block (counters 7, 8, 9) per column.
  EXPECT_EQ(uints(r[0]), (std::vector<uint64_t>{5, 10}));
  EXPECT_EQ(uints(r[1]), (std::vector<uint64_t>{4000641395, 10964293, 3804237681, 1063621336, 2057536082, 1604586794}));
  // An odd length: the last block's second word is dropped.
  EXPECT_EQ(uints(r[2]), (std::vector<uint64_t>{5, 9}));
  EXPECT_EQ(uints(r[3]), (std::vector<uint64_t>{4000641395, 1063621336, 10964293}));
  // 8 bits: the 32-bit words truncated.
  EXPECT_EQ(uints(r[4]), (std::vector<uint64_t>{5, 9}));
  EXPECT_EQ(uints(r[5]), (std::vector<uint64_t>{115, 216, 69, 82}));
  // PHILOX, 3-entry state: the counter 2^64 - 1 carries into its high word.
  EXPECT_EQ(uints(r[6]), (std::vector<uint64_t>{3, 1, 1}));
  EXPECT_EQ(uints(r[7]), (std::vector<uint64_t>{2318595797, 1139617951, 3895735452, 782917499, 878942149, 3997216075}));
  // PHILOX, 2-entry state (counter = (state[1], state[0])), 64 bits: two elements per block.
  EXPECT_EQ(uints(r[8]), (std::vector<uint64_t>{3, 12}));
  EXPECT_EQ(uints(r[9]), (std::vector<uint64_t>{16123183745873825448u, 8221651870189772314u, 16734881745897428883u}));
  EXPECT_EQ(uints(r[10]), (std::vector<uint64_t>{3, 12}));
  EXPECT_EQ(uints(r[11]), (std::vector<uint64_t>{20136, 3633, 24090, 11472, 38803}));
  EXPECT_EQ(r[12], r[11]);  // DEFAULT is PHILOX
  // A float output holds the bits.
  ASSERT_EQ(r[13].bytes().size(), r[14].bytes().size());
  EXPECT_TRUE(std::equal(r[13].bytes().begin(), r[13].bytes().end(), r[14].bytes().begin()));
}

TEST(RngBitGenerator, PrettyAndGenericFormsRoundTrip) {
  std::string once = stablehlo::print(*stablehlo::parse(kPacking, "t.mlir"));
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(once, "printed.mlir")), once);
  EXPECT_NE(once.find("stablehlo.rng_bit_generator %c, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, "
                      "tensor<2x3xui32>)"),
            std::string::npos)
      << once;
}

std::string generator_error(const std::string& algorithm, const std::string& state, const std::string& out) {
  return error_of(fmt::format(R"(
func.func @main(%s: {1}) -> {2} {{
  %0:2 = "stablehlo.rng_bit_generator"(%s) {{rng_algorithm = #stablehlo<rng_algorithm {0}>}} : ({1}) -> ({1}, {2})
  return %0#1 : {2}
}}
)", algorithm, state, out));
}

TEST(RngBitGenerator, ShapeRuleMessages) {
  auto has = [](const std::string& msg, const std::string& part) { EXPECT_NE(msg.find(part), std::string::npos) << msg; };
  has(generator_error("THREE_FRY", "tensor<3xui64>", "tensor<4xui32>"),
      "stablehlo.rng_bit_generator: initial_state has 3 entries; THREE_FRY's state has 2 (C2)");
  has(generator_error("PHILOX", "tensor<4xui64>", "tensor<4xui32>"), "initial_state has 4 entries; PHILOX's state has 2 or 3 (C2)");
  has(generator_error("DEFAULT", "tensor<1xui64>", "tensor<4xui32>"),
      "initial_state has 1 entries; DEFAULT's state has 2 or 3 (C2, DEFAULT is PHILOX in Tessera)");
  has(generator_error("PHILOX", "tensor<2xi64>", "tensor<4xui32>"), "initial_state is tensor<2xi64>, must be a 1-dimensional tensor of ui64");
  has(generator_error("PHILOX", "tensor<2xui64>", "tensor<4xi1>"), "output is tensor<4xi1>, must be a tensor of an integer or floating-point type");
  has(generator_error("PHILOX", "tensor<2xui64>", "tensor<4xi4>"), "random bits are packed into elements of 8, 16, 32 or 64 bits only");
  has(error_of(R"(
func.func @main(%s: tensor<2xui64>) -> tensor<4xui32> {
  %0:2 = "stablehlo.rng_bit_generator"(%s) {rng_algorithm = #stablehlo<rng_algorithm PHILOX>} : (tensor<2xui64>) -> (tensor<3xui64>, tensor<4xui32>)
  return %0#1 : tensor<4xui32>
}
)"),
      "output_state is tensor<3xui64>, but initial_state is tensor<2xui64>: types must be the same (C1)");
  has(error_of(R"(
func.func @main(%s: tensor<2xui64>) -> tensor<4xui32> {
  %0:2 = stablehlo.rng_bit_generator %s, algorithm = MERSENNE : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
  return %0#1 : tensor<4xui32>
}
)"),
      "unknown rng algorithm 'MERSENNE'");
}

const std::string kRng = R"(
func.func @main() -> (tensor<3x3xi32>, tensor<1000xf32>, tensor<1000xf32>, tensor<4000xf64>, tensor<1000xf32>) {
  %a = stablehlo.constant dense<0> : tensor<i32>
  %b = stablehlo.constant dense<2> : tensor<i32>
  %shape = stablehlo.constant dense<[3, 3]> : tensor<2xi64>
  %0 = "stablehlo.rng"(%a, %b, %shape) {rng_distribution = #stablehlo<rng_distribution UNIFORM>} : (tensor<i32>, tensor<i32>, tensor<2xi64>) -> tensor<3x3xi32>
  %lo = stablehlo.constant dense<2.0> : tensor<f32>
  %hi = stablehlo.constant dense<5.0> : tensor<f32>
  %n = stablehlo.constant dense<1000> : tensor<1xi64>
  %1 = stablehlo.rng %lo, %hi, %n, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<1000xf32>
  %2 = stablehlo.rng %lo, %hi, %n, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<1000xf32>
  %mean = stablehlo.constant dense<1.0> : tensor<f64>
  %sd = stablehlo.constant dense<2.0> : tensor<f64>
  %m = stablehlo.constant dense<4000> : tensor<1xi64>
  %3 = stablehlo.rng %mean, %sd, %m, distribution = NORMAL : (tensor<f64>, tensor<f64>, tensor<1xi64>) -> tensor<4000xf64>
  %4 = stablehlo.rng %lo, %hi, %n, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<1000xf32>
  return %0, %1, %2, %3, %4 : tensor<3x3xi32>, tensor<1000xf32>, tensor<1000xf32>, tensor<4000xf64>, tensor<1000xf32>
}
)";

// 1000 uniform draws on [2, 5): mean 3.5 with standard error 0.027; 4000 normal draws N(1, 2²):
// mean 1 with standard error 0.032, standard deviation 2 with standard error 0.022. The bounds
// below are 5 standard errors.
TEST(Rng, DrawsLieInTheirRangeWithTheirMoments) {
  auto r = run_main(kRng);
  ASSERT_EQ(r.size(), 5u);
  int ones = 0;
  for (int64_t i = 0; i < 9; ++i) {
    int64_t v = r[0].get_int(i);
    EXPECT_TRUE(v == 0 || v == 1) << v;
    ones += v == 1;
  }
  EXPECT_GT(ones, 0);
  EXPECT_LT(ones, 9);
  double sum = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    double v = r[1].get_double(i);
    EXPECT_TRUE(v >= 2 && v < 5) << v;
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 3.5, 0.14);
  double s1 = 0, s2 = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    double v = r[3].get_double(i);
    s1 += v;
    s2 += v * v;
  }
  double mean = s1 / 4000, sd = std::sqrt(s2 / 4000 - mean * mean);
  EXPECT_NEAR(mean, 1, 0.16);
  EXPECT_NEAR(sd, 2, 0.11);
  // Each op draws its own numbers (keyed by its position), the same ones every run.
  EXPECT_NE(r[1], r[2]);
  EXPECT_NE(r[1], r[4]);
  EXPECT_EQ(run_main(kRng)[1], r[1]);
}

TEST(Rng, PrettyAndGenericFormsRoundTrip) {
  std::string once = stablehlo::print(*stablehlo::parse(kRng, "t.mlir"));
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(once, "printed.mlir")), once);
  EXPECT_NE(once.find("stablehlo.rng %c, %c_0, %c_1, distribution = UNIFORM : (tensor<i32>, tensor<i32>, tensor<2xi64>) "
                      "-> tensor<3x3xi32>"),
            std::string::npos)
      << once;
}

std::string rng_error(const std::string& distribution, const std::string& ab, const std::string& shape,
                      const std::string& out, const std::string& shape_value = "dense<[4]>") {
  std::string bound = ab.find('f') != std::string::npos ? "dense<1.0>" : "dense<1>";
  return error_of(fmt::format(R"(
func.func @main() -> {3} {{
  %a = stablehlo.constant {5} : {1}
  %b = stablehlo.constant {5} : {1}
  %shape = stablehlo.constant {4} : {2}
  %0 = stablehlo.rng %a, %b, %shape, distribution = {0} : ({1}, {1}, {2}) -> {3}
  return %0 : {3}
}}
)", distribution, ab, shape, out, shape_value, bound));
}

TEST(Rng, ShapeRuleMessages) {
  auto has = [](const std::string& msg, const std::string& part) { EXPECT_NE(msg.find(part), std::string::npos) << msg; };
  has(rng_error("UNIFORM", "tensor<f32>", "tensor<1xi64>", "tensor<4xf64>"),
      "stablehlo.rng: a is tensor<f32> and b is tensor<f32>, but the result is tensor<4xf64>: element types must be the "
      "same (C1)");
  has(rng_error("NORMAL", "tensor<i32>", "tensor<1xi64>", "tensor<4xi32>"), "NORMAL needs floating-point a and b, not i32 (C2)");
  has(rng_error("UNIFORM", "tensor<f32>", "tensor<2xi64>", "tensor<4xf32>", "dense<[4, 1]>"),
      "shape has 2 entries, but the result tensor<4xf32> has rank 1 (C3)");
  has(rng_error("UNIFORM", "tensor<f32>", "tensor<1xi64>", "tensor<4xf32>", "dense<[5]>"),
      "stablehlo.rng: shape [5] is not the result's shape tensor<4xf32> (C3)");
  has(rng_error("UNIFORM", "tensor<2xf32>", "tensor<1xi64>", "tensor<4xf32>"),
      "a is tensor<2xf32>, must be a 0-dimensional tensor of an integer, boolean or floating-point type");
  has(rng_error("UNIFORM", "tensor<f32>", "tensor<1xi32>", "tensor<4xf32>", "dense<[4]>"),
      "shape is tensor<1xi32>, must be a 1-dimensional tensor of i64");
  has(rng_error("GAMMA", "tensor<f32>", "tensor<1xi64>", "tensor<4xf32>"), "unknown rng distribution 'GAMMA'");
  EXPECT_EQ(rng_error("UNIFORM", "tensor<f32>", "tensor<1xi64>", "tensor<4xf32>"), "<no error>");
}

}  // namespace
}  // namespace tessera::interp
