// What the reverse transform refuses, and the message it gives: a user error that names the op (or
// the parameter) and says why. Loops, calls, custom calls and parallel runs are refused outright;
// reductions, scatters and collectives only for bodies other than the ones with rules; a manual
// computation when some value is replicated along a manual axis. An op whose results carry no
// cotangent is never asked, so a loop off the loss's path is no error.
#include "autodiff_test_util.h"
#include "ir/builder_numeric.h"
#include "ir/builder_effects.h"
#include "ir/rng.h"

namespace tessera::autodiff::testing {

std::vector<OpKind> refused_ops() {
  return {OpKind::While, OpKind::Call, OpKind::CustomCall, OpKind::RunParallel,
          // More elementwise ops (#17).
          OpKind::BesselI1e, OpKind::NextAfter, OpKind::Complex,
          // Shape polymorphism (#17): refused until refinement makes them static ops.
          OpKind::DynamicBroadcastInDim, OpKind::DynamicConv, OpKind::DynamicGather, OpKind::DynamicIota,
          OpKind::DynamicPad, OpKind::DynamicReshape, OpKind::RealDynamicSlice,
          // Numerics (#17): fft's operand or result is always complex.
          OpKind::Fft,
          // rng (#17): random draws, not differentiated in their bounds.
          OpKind::Rng,
          // Tuples (#17): the HLO ABI's grouping, which JAX never differentiates through.
          OpKind::Tuple, OpKind::GetTupleElement,
          // Futures (#17): asynchronous collectives and slices, made after differentiation
          // (tests/stablehlo/async_test.cpp checks the message).
          OpKind::AsyncStart, OpKind::AsyncDone};
}

namespace {

using ir::ElementType;
using ir::FunctionBuilder;

// The message of reversing @f, built in a module of its own by `body`.
std::string reverse_message(const std::function<Tensor(FunctionBuilder&)>& body, ReverseOptions o = {}) {
  ir::Module m("refusal");
  m.add_mesh({"m", {{"x", 2}}, {}});
  ir::build_function(m, "g", [](FunctionBuilder& b) { return ir::tanh(b.param(ir::f32({4}))); });
  const ir::Function& f = ir::build_function(m, "f", body);
  return message_of([&] { reverse(m, f, o); });
}

std::vector<Tensor> loop(const Tensor& x) { return tanh_loop(x); }

Tensor named(FunctionBuilder& b, OpKind kind, const std::string& attr, ir::Attribute value, const Tensor& x) {
  ir::AttrMap a;
  a.set(attr, std::move(value));
  return b.emit(kind, {x}, std::move(a), {x.type()})[0];
}

TEST(Refusal, ValuesThroughATuple) {
  std::string why = "tuples are the HLO ABI's grouping of values and carry no cotangent or tangent; pass the "
                    "members as separate values";
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::sum(ir::get_tuple_element(ir::tuple(b, {x, x}), 1));
            }),
            "cannot differentiate stablehlo.get_tuple_element: " + why);
  // A tuple whose members do not reach the loss is no obstacle.
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              ir::tuple(b, {x, ir::create_token(b)});
              return ir::sum(x * x);
            }),
            "<no error>");
}

TEST(Refusal, WhileLoop) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) { return ir::sum(loop(b.param(ir::f32({4})))[1]); }),
            "cannot differentiate stablehlo.while: loops are not differentiated yet (the reverse pass "
            "would need every iteration's values); unroll the loop, or keep its results out of the loss");
}

TEST(Refusal, LoopOffTheLossPathIsNoError) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              loop(x);
              return ir::sum(x * x);
            }),
            "<no error>");
}

TEST(Refusal, CustomCall) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              return ir::sum(named(b, OpKind::CustomCall, "call_target_name", std::string("foo"), b.param(ir::f32({4}))));
            }),
            "cannot differentiate stablehlo.custom_call: the derivative of custom call target 'foo' is unknown");
}

TEST(Refusal, Call) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              return ir::sum(named(b, OpKind::Call, "callee", std::string("g"), b.param(ir::f32({4}))));
            }),
            "cannot differentiate func.call: calls are not differentiated yet; inline @g into the caller first");
}

TEST(Refusal, RunParallel) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              return ir::sum(named(b, OpKind::RunParallel, "programs", ir::SymbolGrid{{{"g"}, {"g"}}},
                                   b.param(ir::f32({4}))));
            }),
            "cannot differentiate interpreter.run_parallel: a parallel run of programs is a test harness "
            "op, not a differentiable computation");
}

TEST(Refusal, IntegerParameter) {
  ReverseOptions o;
  o.wrt = {1};
  EXPECT_EQ(reverse_message(
                [](FunctionBuilder& b) {
                  Tensor x = b.param(ir::f32({4}));
                  return ir::sum(x * ir::convert(b.param(ir::i32({4})), ElementType::f32));
                },
                o),
            "parameter 1 of @f has type tensor<4xi32>: only float parameters have gradients");
}

TEST(Refusal, ReduceWithAMultiplyBody) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::reduce(x, b.scalar(ElementType::f32, 1), {0}, OpKind::Multiply);
            }),
            "cannot differentiate stablehlo.reduce: a reduce whose body is stablehlo.multiply has no "
            "gradient rule; only add, maximum and minimum do");
}

TEST(Refusal, ReduceOfTwoInputs) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              Tensor i = b.iota(ir::i32({4}), 0);
              std::vector<Tensor> r = b.emit_with_regions(
                  OpKind::Reduce, {x, i, b.scalar(ElementType::f32, 0), b.scalar(ElementType::i32, 0)},
                  [] { ir::AttrMap a; a.set("dimensions", std::vector<int64_t>{0}); return a; }(), {},
                  [](ir::Op& op) { op.add_region(); });
              return r[0];
            }),
            "cannot differentiate stablehlo.reduce: a reduce of 2 inputs at once (e.g. an argmax) is not "
            "differentiated yet");
}

// More elementwise ops (#17): JAX has no derivative of nextafter; bessel_i1e's needs a function
// Tessera does not define; complex values are never differentiated; polygamma's and zeta's orders
// have no derivative (a constant order is no obstacle).
TEST(Refusal, MoreElementwiseOps) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::sum(ir::polygamma(x, x));
            }),
            "cannot differentiate chlo.polygamma: its order n takes integer values and has no derivative; it must "
            "be a constant of the program");
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor q = b.param(ir::f32({4}));
              return ir::sum(ir::zeta(q + 1.0, q));
            }),
            "cannot differentiate chlo.zeta: its order s takes integer values and has no derivative; it must "
            "be a constant of the program");
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::sum(ir::polygamma(ir::broadcast_to(b.scalar(ir::ElementType::f32, 2), {4}), x));
            }),
            "<no error>");
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) { return ir::sum(ir::bessel_i1e(b.param(ir::f32({4})))); }),
            "cannot differentiate chlo.bessel_i1e: its derivative needs bessel_i0e, which Tessera does not define");
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::sum(ir::next_after(x, x * 2.0));
            }),
            "cannot differentiate chlo.next_after: it has no derivative (JAX defines none for nextafter either)");
  std::string complex_why = ": complex values are not differentiated (their cotangents need conjugation)";
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::sum(ir::real(ir::complex(x, x)));
            }),
            "cannot differentiate stablehlo.real" + complex_why);
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::sum(ir::imag(ir::conj(ir::complex(x, x))));
            }),
            "cannot differentiate stablehlo.imag" + complex_why);
}

// fft: JAX transposes it with complex cotangents, which Tessera does not have; IRFFT's real result
// reaches the rule itself (the other transforms' complex results stop at real/imag first).
TEST(Refusal, Fft) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::sum(ir::fft(ir::complex(x, x), ir::FftType::kIrfft, {6}));
            }),
            "cannot differentiate stablehlo.fft: its operand or result is complex, and complex values are not "
            "differentiated (their cotangents need conjugation)");
}

// rng: bounds computed from the parameters are refused; constant bounds receive nothing, so a
// program that scales a draw differentiates.
TEST(Refusal, Rng) {
  auto draw = [](FunctionBuilder& b, const Tensor& lo) {
    Tensor shape = b.constant(ints(ir::i64({1}), {4}));
    return ir::rng(lo, b.scalar(ir::ElementType::f32, 1), shape, ir::RngDistribution::kUniform, ir::f32({4}));
  };
  EXPECT_EQ(reverse_message([&](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({}));
              return ir::sum(draw(b, x));
            }),
            "cannot differentiate stablehlo.rng: its numbers are random draws; their dependence on the bounds a and "
            "b is not differentiated");
  EXPECT_EQ(reverse_message([&](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({4}));
              return ir::sum(x * draw(b, b.scalar(ir::ElementType::f32, 0)));
            }),
            "<no error>");
}

TEST(Refusal, ScatterWithAMaximumBody) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              ir::ScatterDims d{.update_window_dims = {}, .inserted_window_dims = {0}, .input_batching_dims = {},
                                .scatter_indices_batching_dims = {}, .scatter_dims_to_operand_dims = {0},
                                .index_vector_dim = 1};
              Tensor idx = b.constant(ints(ir::i32({2, 1}), {0, 2}));
              return ir::sum(ir::scatter(b.param(ir::f32({4})), idx, b.param(ir::f32({2})), d, OpKind::Maximum));
            }),
            "cannot differentiate stablehlo.scatter: a scatter whose update computation is "
            "stablehlo.maximum has no gradient rule; only add and replace do");
}

TEST(Refusal, CollectivesWithAMaximumBody) {
  std::string why = ": a reduction body of stablehlo.maximum has no gradient rule; only add (a sum) does";
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              return ir::sum(ir::all_reduce(b.param(ir::f32({4})), {{0, 1}}, OpKind::Maximum));
            }),
            "cannot differentiate stablehlo.all_reduce" + why);
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              return ir::sum(ir::reduce_scatter(b.param(ir::f32({4})), 0, {{0, 1}}, OpKind::Maximum));
            }),
            "cannot differentiate stablehlo.reduce_scatter" + why);
}

TEST(Refusal, BroadcastAndReduceWithAChannel) {
  std::string why = " would group processes differently when a channel_handle is set; only the form "
                    "without a channel (cross_replica) is differentiated";
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              return ir::sum(ir::collective_broadcast(b.param(ir::f32({4})), {{0, 1}}));
            }),
            "cannot differentiate stablehlo.collective_broadcast: its adjoint stablehlo.collective_reduce" + why);
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              return ir::sum(ir::collective_reduce(b.param(ir::f32({4})), {{0, 1}}));
            }),
            "cannot differentiate stablehlo.collective_reduce: its adjoint stablehlo.collective_broadcast" + why);
}

TEST(Refusal, ManualComputationWithAReplicatedInput) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              ir::Sharding split{"m", {{"x"}}, {}, {}}, whole{"m", {{}}, {}, {}};
              Tensor x = b.param(ir::f32({4})), w = b.param(ir::f32({2}));
              auto body = [](ir::Builder&, const std::vector<Tensor>& l) { return std::vector<Tensor>{l[0] * l[1]}; };
              return ir::sum(ir::manual({x, w}, {split, whole}, {split}, {"x"}, body)[0]);
            }),
            "cannot differentiate sdy.manual_computation: input 1 is not split over every manual axis, so "
            "its cotangent would need a sum over the devices that share it; not differentiated yet");
}

TEST(Refusal, NoHelperFunctionIsLeftBehind) {
  ir::Module m("refusal");
  m.add_mesh({"m", {{"x", 2}}, {}});
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    ir::Sharding split{"m", {{"x"}}, {}, {}};
    auto body = [](ir::Builder&, const std::vector<Tensor>& l) { return std::vector<Tensor>{loop(l[0])[1]}; };
    return ir::sum(ir::manual({b.param(ir::f32({4}))}, {split}, {split}, {"x"}, body)[0]);
  });
  EXPECT_EQ(message_of([&] { reverse(m, f); }).substr(0, 43), "cannot differentiate stablehlo.while: loops");
  for (const auto& fn : m.functions) EXPECT_TRUE(fn->name() == "f" || fn->name() == "f_grad") << fn->name();
}

// The manual computation rule builds helper functions; their names never clash with the module's.
TEST(Refusal, HelperFunctionsLeaveTheModulesFunctionsAlone) {
  ir::Module m("helpers");
  m.add_mesh({"m", {{"x", 2}}, {}});
  for (int k = 0; k < 6; ++k)
    for (std::string suffix : {"", "_grad"})
      ir::build_function(m, "manual_computation_vjp_" + std::to_string(k) + suffix,
                         [](FunctionBuilder& b) { return b.param(ir::f32({1})); });
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    ir::Sharding split{"m", {{"x"}}, {}, {}};
    auto body = [](ir::Builder&, const std::vector<Tensor>& l) { return std::vector<Tensor>{ir::exp(l[0])}; };
    return ir::sum(ir::manual({b.param(ir::f32({4}))}, {split}, {split}, {"x"}, body)[0]);
  });
  EXPECT_EQ(message_of([&] { reverse(m, f); }), "<no error>");
  EXPECT_EQ(m.functions.size(), 14u);
  EXPECT_NO_THROW(ir::verify(m));
}

// A dynamic op before shape refinement: the refusal names the op and the way out.
TEST(Refusal, DynamicOpsSayToRefineShapesFirst) {
  EXPECT_EQ(reverse_message([](FunctionBuilder& b) {
              Tensor x = b.param(ir::f32({2, 3}));
              std::vector<int64_t> shape = {3, 2};
              Tensor s = b.constant(ir::Literal::from_ints(ir::i64({2}), shape));
              return ir::sum(b.emit(OpKind::DynamicReshape, {x, s}, {}, {ir::f32({3, 2})})[0]);
            }),
            "cannot differentiate stablehlo.dynamic_reshape: its shapes come from operand values; refine shapes "
            "for concrete inputs first (transforms::refine_shapes, as `tessera run` does), which makes it a "
            "static op");
}

}  // namespace
}  // namespace tessera::autodiff::testing
