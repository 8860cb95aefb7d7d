// The streaming ops, stablehlo.infeed and stablehlo.outfeed (#17): their generic forms (the spec's
// attribute dictionary and MLIR's properties read to the same op; print -> parse -> print is the
// identity), each constraint on its message (infeed C1-C3 and its inputs, the `layout` checks of
// StableHLO's verifier, outfeed's inputs), the values through the interpreter with the hooks
// (interp::Options::infeed / outfeed) and the refusal without them, and the transforms: a
// gradient and a tangent through a program that reads the infeed (its values are leaves, read
// once), vmap refused by name. send and recv: their generic forms and constraints, and their
// values in one process (tests/tools/check_test.cpp runs them between processes).
#include <gtest/gtest.h>

#include <deque>

#include "common/parse_error.h"
#include "autodiff/forward.h"
#include "autodiff/reverse.h"
#include "autodiff/vmap.h"
#include "common/error_of.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using ir::Literal;
using ir::Type;

using testing::parse_error;

// The spec's form (an attribute dictionary), a layout, two payload values, and outfeed of a
// parameter and an infeed value.
const std::string kSpecForm = R"(func.func @main(%arg0: !stablehlo.token, %arg1: tensor<2x2x2xi64>) -> (tensor<2x2xi64>, tensor<f32>, !stablehlo.token) {
  %0:3 = "stablehlo.infeed"(%arg0) {infeed_config = "", layout = [[1, 0], []]} : (!stablehlo.token) -> (tensor<2x2xi64>, tensor<f32>, !stablehlo.token)
  %1 = "stablehlo.outfeed"(%arg1, %0#0, %0#2) {outfeed_config = "cfg"} : (tensor<2x2x2xi64>, tensor<2x2xi64>, !stablehlo.token) -> !stablehlo.token
  return %0#0, %0#1, %1 : tensor<2x2xi64>, tensor<f32>, !stablehlo.token
}
)";

// MLIR's generic form with properties, as the printer writes it (in a module).
const std::string kPropertiesForm = R"(module {
  func.func public @main(%arg0: !stablehlo.token, %arg1: tensor<2x2x2xi64>) -> (tensor<2x2xi64>, tensor<f32>, !stablehlo.token) {
    %0:3 = "stablehlo.infeed"(%arg0) <{infeed_config = "", layout = [[1, 0], []]}> : (!stablehlo.token) -> (tensor<2x2xi64>, tensor<f32>, !stablehlo.token)
    %1 = "stablehlo.outfeed"(%arg1, %0#0, %0#2) <{outfeed_config = "cfg"}> : (tensor<2x2x2xi64>, tensor<2x2xi64>, !stablehlo.token) -> !stablehlo.token
    return %0#0, %0#1, %1 : tensor<2x2xi64>, tensor<f32>, !stablehlo.token
  }
}
)";

Literal i64s(std::vector<int64_t> shape, std::vector<int64_t> v) { return Literal::from_ints(ir::i64(shape), v); }

TEST(Effects, FeedsRoundTripConstraintsAndValues) {
  // Both generic forms read to one op; the printer writes the properties form, which reads back.
  std::unique_ptr<ir::Module> m = parse(kSpecForm, "t.mlir");
  std::string printed = print(*m);
  EXPECT_EQ(printed, kPropertiesForm);
  EXPECT_EQ(print(*parse(kPropertiesForm, "p.mlir")), printed);
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
  // Without configs (both default to "") and without a layout.
  const std::string bare = R"(module {
  func.func public @main(%arg0: !stablehlo.token) -> !stablehlo.token {
    %0:2 = "stablehlo.infeed"(%arg0) : (!stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
    %1 = "stablehlo.outfeed"(%0#1) : (!stablehlo.token) -> !stablehlo.token
    return %1 : !stablehlo.token
  }
}
)";
  EXPECT_EQ(print(*parse(bare, "b.mlir")), bare);

  // Each constraint on its message.
  auto infeed = [](const std::string& attrs, const std::string& results, const std::string& operand = "!stablehlo.token",
                   const std::string& names = "") {
    return "func.func @main(%arg0: " + operand + ") {\n  " + names + "\"stablehlo.infeed\"(%arg0) " + attrs + ": (" + operand +
           ") -> (" + results + ")\n  return\n}\n";
  };
  EXPECT_EQ(parse_error(infeed("", "")), "t.mlir:2:3: stablehlo.infeed: has no results; the last result is the token (C1)");
  EXPECT_EQ(parse_error(infeed("", "!stablehlo.token, tensor<2xi64>, !stablehlo.token")),
            "t.mlir:2:3: stablehlo.infeed: result 0 is !stablehlo.token, not a tensor: every result but the last is a "
            "payload value (C2)");
  EXPECT_EQ(parse_error(infeed("", "tensor<2xi64>, tensor<2xi64>")),
            "t.mlir:2:3: stablehlo.infeed: result 1 is tensor<2xi64>, not a token: the last result is the token (C3)");
  EXPECT_EQ(parse_error(infeed("", "tensor<2xi64>, !stablehlo.token", "tensor<i1>")),
            "t.mlir:2:3: stablehlo.infeed: operand is tensor<i1>, not a token (I1)");
  EXPECT_EQ(parse_error(infeed("{infeed_config = 3 : i64} ", "!stablehlo.token")),
            "t.mlir:2:3: stablehlo.infeed: infeed_config must be a string (I2)");
  // The layout checks of StableHLO's verifier (the spec has no layout).
  std::string two = "tensor<3x3xi32>, tensor<i1>, !stablehlo.token";
  EXPECT_EQ(parse_error(infeed("{layout = [[0, 1]]} ", two)),
            "t.mlir:2:3: stablehlo.infeed: layout has 1 entries but the op has 2 payload values (one per result but "
            "the token)");
  EXPECT_EQ(parse_error(infeed("{layout = [[]]} ", "!stablehlo.token")),
            "t.mlir:2:3: stablehlo.infeed: layout has 1 entries but the op has 0 payload values (one per result but "
            "the token)");
  EXPECT_EQ(parse_error(infeed("{layout = [0, []]} ", two)),
            "t.mlir:2:3: stablehlo.infeed: layout entry 0 is 0, not an array of integers");
  EXPECT_EQ(parse_error(infeed("{layout = [[1, 0], [\"x\"]]} ", two)),
            "t.mlir:2:3: stablehlo.infeed: layout entry 1 holds \"x\", which is not an integer");
  EXPECT_EQ(parse_error(infeed("{layout = \"[[1, 0], []]\"} ", two)),
            "t.mlir:2:3: stablehlo.infeed: layout must be an array (of one array of integers per payload value)");
  EXPECT_EQ(parse_error(infeed("{layout = [[1 : i64, 0 : i64], []]} ", two, "!stablehlo.token", "%0:3 = ")), "<no error>");
  auto outfeed = [](const std::string& attrs, const std::string& operands, const std::string& types) {
    return "func.func @main(%arg0: tensor<2xf32>, %arg1: !stablehlo.token) {\n  %0 = \"stablehlo.outfeed\"(" + operands +
           ") " + attrs + ": (" + types + ") -> !stablehlo.token\n  return\n}\n";
  };
  const std::string x_tok = "tensor<2xf32>, !stablehlo.token", tok = "!stablehlo.token";
  EXPECT_EQ(parse_error(outfeed("", "%arg0, %arg1", x_tok)), "<no error>");
  EXPECT_EQ(parse_error(outfeed("", "%arg1, %arg1", tok + ", " + tok)),
            "t.mlir:2:3: stablehlo.outfeed: input 0 is !stablehlo.token, not a tensor: every operand but the last is a "
            "value to write (I1)");
  EXPECT_EQ(parse_error(outfeed("", "%arg0, %arg0", "tensor<2xf32>, tensor<2xf32>")),
            "t.mlir:2:3: stablehlo.outfeed: operand 1 is tensor<2xf32>, not a token: the last operand is the token (I2)");
  EXPECT_EQ(parse_error(outfeed("", "", "")),
            "t.mlir:2:3: stablehlo.outfeed: has no operands; the last operand is the token (I2)");
  EXPECT_EQ(parse_error(outfeed("{outfeed_config = 1.5 : f32} ", "%arg0, %arg1", x_tok)),
            "t.mlir:2:3: stablehlo.outfeed: outfeed_config must be a string (I3)");

  // Values: the infeed gives each payload value in result order, given its type; outfeed hands
  // its inputs, in order, to the hook.
  std::deque<Literal> queue = {i64s({2, 2}, {1, 2, 3, 4}), Literal::from_doubles(ir::f32(), std::vector<double>{2.5})};
  std::vector<Type> asked;
  std::vector<std::vector<Literal>> written;
  interp::Options o;
  o.infeed = [&](const Type& t) {
    asked.push_back(t);
    Literal v = queue.front();
    queue.pop_front();
    return v;
  };
  o.outfeed = [&](std::vector<Literal> v) { written.push_back(std::move(v)); };
  Literal x = i64s({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<Literal> r = interp::evaluate(*m, "main", {Literal::token(), x}, o);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], i64s({2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(r[1], Literal::from_doubles(ir::f32(), std::vector<double>{2.5}));
  EXPECT_EQ(r[2], Literal::token());
  EXPECT_EQ(asked, (std::vector<Type>{ir::i64({2, 2}), ir::f32()}));
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0], (std::vector<Literal>{x, i64s({2, 2}, {1, 2, 3, 4})}));
  EXPECT_TRUE(queue.empty());
  // A value of another type than the result's is refused, naming both.
  queue = {i64s({2}, {1, 2}), Literal::from_doubles(ir::f32(), std::vector<double>{0})};
  EXPECT_EQ(tessera::testing::error_of([&] { interp::evaluate(*m, "main", {Literal::token(), x}, o); }),
            "stablehlo.infeed: the infeed gave a tensor<2xi64> value for result 0, which is tensor<2x2xi64>");
}

// Without the hooks each op is refused by name, with where the hook comes from.
TEST(Effects, FeedsWithoutHooksAreRefusedByName) {
  std::unique_ptr<ir::Module> m = parse(kSpecForm, "t.mlir");
  Literal x = i64s({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(tessera::testing::error_of([&] { interp::evaluate(*m, "main", {Literal::token(), x}); }),
            "stablehlo.infeed: no infeed to read from (interp::Options::infeed; tessera check fills one from "
            "interpreter.run_parallel's infeed functions)");
  interp::Options o;
  o.infeed = [](const Type& t) { return Literal(t); };
  EXPECT_EQ(tessera::testing::error_of([&] { interp::evaluate(*m, "main", {Literal::token(), x}, o); }),
            "stablehlo.outfeed: no outfeed to write to (interp::Options::outfeed; tessera check prints what is "
            "written)");
}

// A program that reads w from the infeed and writes x to the outfeed: loss = sum(x * w).
const std::string kLoss = R"(func.func @f(%arg0: tensor<3xf64>, %arg1: !stablehlo.token) -> tensor<f64> {
  %0:2 = "stablehlo.infeed"(%arg1) <{infeed_config = ""}> : (!stablehlo.token) -> (tensor<3xf64>, !stablehlo.token)
  %1 = "stablehlo.outfeed"(%arg0, %0#1) <{outfeed_config = ""}> : (tensor<3xf64>, !stablehlo.token) -> !stablehlo.token
  %2 = stablehlo.multiply %arg0, %0#0 : tensor<3xf64>
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f64>
  %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<3xf64>, tensor<f64>) -> tensor<f64>
  return %3 : tensor<f64>
}
func.func @h(%arg0: tensor<3xf64>, %arg1: !stablehlo.token) -> tensor<f64> {
  %0:2 = "stablehlo.infeed"(%arg1) <{infeed_config = ""}> : (!stablehlo.token) -> (tensor<3xf64>, !stablehlo.token)
  %1 = stablehlo.multiply %arg0, %0#0 : tensor<3xf64>
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f64>
  %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<3xf64>, tensor<f64>) -> tensor<f64>
  return %2 : tensor<f64>
}
func.func @g(%arg0: tensor<3xf64>, %arg1: !stablehlo.token) -> !stablehlo.token {
  %0 = "stablehlo.outfeed"(%arg0, %arg1) <{outfeed_config = ""}> : (tensor<3xf64>, !stablehlo.token) -> !stablehlo.token
  return %0 : !stablehlo.token
}
)";

// d/dx sum(x * w) = w, with w the value read from the infeed (a leaf: no gradient of its own); the
// gradient program reads the infeed once and writes the outfeed once, as f does. The tangent along
// dx is sum(dx * w). vmap refuses outfeed by name and reads the infeed once for the batch.
TEST(Effects, FeedsInTheTransforms) {
  std::unique_ptr<ir::Module> m = parse(kLoss, "t.mlir");
  const ir::Function& f = *m->find_function("f");
  autodiff::ReverseOptions ro;
  ro.wrt = {0};
  autodiff::reverse(*m, f, ro);
  autodiff::forward(*m, f);
  Literal w = Literal::from_doubles(ir::f64({3}), std::vector<double>{0.5, -2, 3});
  Literal x = Literal::from_doubles(ir::f64({3}), std::vector<double>{1, 2, 4});
  int reads = 0;
  std::vector<Literal> written;
  interp::Options o;
  o.infeed = [&](const Type&) {
    ++reads;
    return w;
  };
  o.outfeed = [&](std::vector<Literal> v) { written.insert(written.end(), v.begin(), v.end()); };
  std::vector<Literal> g = interp::evaluate(*m, "f_grad", {x, Literal::token()}, o);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0], w);
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(written, std::vector<Literal>{x});
  Literal dx = Literal::from_doubles(ir::f64({3}), std::vector<double>{1, 1, 0});
  std::vector<Literal> t = interp::evaluate(*m, "f_jvp", {x, Literal::token(), dx}, o);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0], Literal::from_doubles(ir::f64(), std::vector<double>{0.5 - 4 + 12}));
  EXPECT_EQ(t[1], Literal::from_doubles(ir::f64(), std::vector<double>{0.5 - 2}));
  EXPECT_EQ(reads, 2);
  // vmap: outfeed of a batched value is refused by name. infeed's operand is a token, which is never
  // batched, so vmap copies it as it is: the batched program reads the infeed once and the
  // examples share its values (as JAX binds a primitive without batched inputs once).
  autodiff::VmapOptions vo;
  vo.in_axes = {0, std::nullopt};
  vo.batch_size = 2;
  std::string outfeed_why =
      "cannot vmap stablehlo.outfeed: it writes its values to the outfeed; a batched program would write one "
      "per example, in no defined order (write the batch as one value instead)";
  EXPECT_EQ(tessera::testing::error_of([&] { autodiff::vmap(*m, *m->find_function("g"), vo); }), outfeed_why);
  EXPECT_EQ(tessera::testing::error_of([&] { autodiff::vmap(*m, f, vo); }), outfeed_why);
  const ir::Function& h = *m->find_function("h");
  vo.name = "h_vmap";
  autodiff::vmap(*m, h, vo);
  Literal xs = Literal::from_doubles(ir::f64({2, 3}), std::vector<double>{1, 2, 4, -1, 0, 1});
  reads = 0;
  std::vector<Literal> b = interp::evaluate(*m, "h_vmap", {xs, Literal::token()}, o);
  EXPECT_EQ(reads, 1);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0], Literal::from_doubles(ir::f64({2}), std::vector<double>{0.5 - 4 + 12, -0.5 + 3}));
}

// send and recv as the spec's examples write them (attribute dictionaries, recv's results named one
// by one) read, print in the generic form with properties and read back; each constraint on its
// message; one process runs them as DESIGN.md §2 says collectives run.
TEST(Effects, SendRecvRoundTripAndConstraints) {
  const std::string spec = R"(func.func @main(%operand: tensor<2x2xi64>, %token: !stablehlo.token) -> (tensor<2x2xi64>, !stablehlo.token) {
  %result = "stablehlo.send"(%operand, %token) {
    channel_handle = #stablehlo.channel_handle<handle = 0, type = 1>,
    is_host_transfer = false,
    source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>
  } : (tensor<2x2xi64>, !stablehlo.token) -> !stablehlo.token
  %results0, %results1 = "stablehlo.recv"(%token) {
    channel_handle = #stablehlo.channel_handle<handle = 0, type = 1>,
    is_host_transfer = false,
    source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>
  } : (!stablehlo.token) -> (tensor<2x2xi64>, !stablehlo.token)
  return %results0, %result : tensor<2x2xi64>, !stablehlo.token
}
)";
  std::unique_ptr<ir::Module> m = parse(spec, "t.mlir");
  std::string printed = print(*m);
  EXPECT_NE(printed.find(
                "  %0 = \"stablehlo.send\"(%arg0, %arg1) <{channel_handle = #stablehlo.channel_handle<handle = 0, type = 1>, "
                "is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>}> : "
                "(tensor<2x2xi64>, !stablehlo.token) -> !stablehlo.token\n"),
            std::string::npos) << printed;
  EXPECT_NE(printed.find(
                "  %1:2 = \"stablehlo.recv\"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 0, type = 1>, "
                "is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>}> : "
                "(!stablehlo.token) -> (tensor<2x2xi64>, !stablehlo.token)\n"),
            std::string::npos) << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);

  // A send of `operand` on channel `attrs`, and a recv of one value.
  auto send = [](const std::string& attrs, const std::string& operands = "%arg0, %arg1",
                 const std::string& types = "tensor<2xf32>, !stablehlo.token") {
    return "func.func @main(%arg0: tensor<2xf32>, %arg1: !stablehlo.token) {\n  %0 = \"stablehlo.send\"(" + operands + ") {" +
           attrs + "} : (" + types + ") -> !stablehlo.token\n  return\n}\n";
  };
  auto recv = [](const std::string& attrs, const std::string& results = "tensor<2xf32>, !stablehlo.token") {
    return "func.func @main(%arg0: !stablehlo.token) {\n  %0:2 = \"stablehlo.recv\"(%arg0) {" + attrs + "} : (!stablehlo.token) -> (" +
           results + ")\n  return\n}\n";
  };
  const std::string d2d = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>";
  const std::string to_host = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>";
  const std::string from_host = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>";
  EXPECT_EQ(parse_error(send(d2d)), "<no error>");
  EXPECT_EQ(parse_error(send(to_host + ", is_host_transfer = true")), "<no error>");
  EXPECT_EQ(parse_error(recv(from_host + ", is_host_transfer = true")), "<no error>");
  EXPECT_EQ(parse_error(recv(to_host + ", is_host_transfer = true")), "<no error>");
  EXPECT_EQ(parse_error(send("")),
            "t.mlir:2:3: stablehlo.send: has no channel_handle = #stablehlo.channel_handle<handle = ..., type = ...> (I3, I4)");
  EXPECT_EQ(parse_error(recv("")),
            "t.mlir:2:3: stablehlo.recv: has no channel_handle = #stablehlo.channel_handle<handle = ..., type = ...> (I2, I3)");
  EXPECT_EQ(parse_error(send(to_host)),
            "t.mlir:2:3: stablehlo.send: channel type 2 (DEVICE_TO_HOST) does not fit is_host_transfer = false: it must "
            "be DEVICE_TO_DEVICE (1) (C5)");
  EXPECT_EQ(parse_error(send(from_host + ", is_host_transfer = true")),
            "t.mlir:2:3: stablehlo.send: channel type 3 (HOST_TO_DEVICE) does not fit is_host_transfer = true: it must "
            "be DEVICE_TO_HOST (2) (C5)");
  EXPECT_EQ(parse_error(recv(d2d + ", is_host_transfer = true")),
            "t.mlir:2:3: stablehlo.recv: channel type 1 (DEVICE_TO_DEVICE) does not fit is_host_transfer = true: it must "
            "be DEVICE_TO_HOST (2) or HOST_TO_DEVICE (3) (C5)");
  EXPECT_EQ(parse_error(send(d2d + ", is_host_transfer = 1 : i64")),
            "t.mlir:2:3: stablehlo.send: is_host_transfer must be true or false (I5)");
  EXPECT_EQ(parse_error(send(d2d + ", source_target_pairs = dense<[[0, 1, 2]]> : tensor<1x3xi64>")),
            "t.mlir:2:3: stablehlo.send: source_target_pairs is 1x3; each pair is [source, target] (C1)");
  EXPECT_EQ(parse_error(send(d2d + ", source_target_pairs = dense<[[0, 1], [0, 2]]> : tensor<2x2xi64>")),
            "t.mlir:2:3: stablehlo.send: source_target_pairs[0] and [1] have the same source 0 (C2)");
  EXPECT_EQ(parse_error(recv(d2d + ", source_target_pairs = dense<[[0, 2], [1, 2]]> : tensor<2x2xi64>")),
            "t.mlir:2:3: stablehlo.recv: source_target_pairs[0] and [1] have the same target 2 (C3)");
  EXPECT_EQ(parse_error(recv(d2d + ", source_target_pairs = dense<[[0, 1], [-1, 0]]> : tensor<2x2xi64>")),
            "t.mlir:2:3: stablehlo.recv: source_target_pairs[1] = [-1, 0] names process -1 (C4)");
  EXPECT_EQ(parse_error(send(d2d, "%arg1, %arg0", "!stablehlo.token, tensor<2xf32>")),
            "t.mlir:2:3: stablehlo.send: input 0 is !stablehlo.token, not a tensor: every operand but the last is a value "
            "to send (I1)");
  EXPECT_EQ(parse_error(send(d2d, "%arg0, %arg0", "tensor<2xf32>, tensor<2xf32>")),
            "t.mlir:2:3: stablehlo.send: operand 1 is tensor<2xf32>, not a token: the last operand is the token (I2)");
  EXPECT_EQ(parse_error(recv(d2d, "tensor<2xf32>, tensor<2xf32>")),
            "t.mlir:2:3: stablehlo.recv: result 1 is tensor<2xf32>, not a token: the last result is the token");
  EXPECT_EQ(parse_error(recv(d2d, "!stablehlo.token, !stablehlo.token")),
            "t.mlir:2:3: stablehlo.recv: result 0 is !stablehlo.token, not a tensor: every result but the last is a "
            "payload value");

  // One process stands for all (DESIGN.md §2): process 0 is a source of the spec's pairs but no
  // target, so its recv gives zeros.
  Literal x = i64s({2, 2}, {1, 2, 3, 4});
  std::vector<Literal> r = interp::evaluate(*m, "main", {x, Literal::token()});
  EXPECT_EQ(r[0], i64s({2, 2}, {0, 0, 0, 0}));
  EXPECT_EQ(r[1], Literal::token());
}

// In one process, a recv takes what a send of its channel sent before it (process 0 a source and
// a target, or no pairs: every process holds the same values, so what it receives is what it
// sent); a recv no send answered, or of other types, is refused naming the channel.
TEST(Effects, SendRecvInOneProcess) {
  auto program = [](const std::string& send_pairs, const std::string& recv_pairs, const std::string& recv_type) {
    return "func.func @main(%arg0: tensor<2xf32>, %arg1: !stablehlo.token) -> " + recv_type + " {\n"
           "  %0 = \"stablehlo.send\"(%arg0, %arg1) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
           "is_host_transfer = false" + send_pairs + "} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token\n"
           "  %1:2 = \"stablehlo.recv\"(%0) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
           "is_host_transfer = false" + recv_pairs + "} : (!stablehlo.token) -> (" + recv_type + ", !stablehlo.token)\n"
           "  return %1#0 : " + recv_type + "\n}\n";
  };
  Literal x = Literal::from_doubles(ir::f32({2}), std::vector<double>{1.5, -2});
  auto run = [&](const std::string& text) { return interp::evaluate(*parse(text, "t.mlir"), "main", {x, Literal::token()}); };
  std::string ring = ", source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>";
  EXPECT_EQ(run(program(ring, ring, "tensor<2xf32>"))[0], x);
  EXPECT_EQ(run(program("", "", "tensor<2xf32>"))[0], x);
  std::string from_1 = ", source_target_pairs = dense<[[1, 0]]> : tensor<1x2xi64>";
  EXPECT_EQ(tessera::testing::error_of([&] { run(program(", source_target_pairs = dense<[[1, 2]]> : tensor<1x2xi64>", from_1,
                                                          "tensor<2xf32>")); }),
            "stablehlo.recv: no stablehlo.send on channel 3 ran before it (one process runs every process's part)");
  EXPECT_EQ(tessera::testing::error_of([&] { run(program("", "", "tensor<3xf32>")); }),
            "stablehlo.recv: the send on channel 3 sent (tensor<2xf32>), but it receives (tensor<3xf32>)");
}

}  // namespace
}  // namespace tessera::stablehlo
