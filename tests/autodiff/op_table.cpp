// The rows of the op table (op_table.h): elementwise, movement, gather/scatter, layout, manual
// computation, reduce and dot_general rows, and the module and function each row is checked in.
#include "op_table.h"

namespace tessera::autodiff::testing {

using ir::ComparisonDirection;
using ir::ElementType;
using ir::FunctionBuilder;

namespace {

Tensor i32s(FunctionBuilder& b, std::vector<int64_t> shape, std::vector<int64_t> v) {
  return b.constant(ints(Type(ElementType::i32, std::move(shape)), std::move(v)));
}
Tensor index(FunctionBuilder& b, int64_t v) { return i32s(b, {}, {v}); }

Row unary(std::string name, OpKind kind, Tensor (*f)(const Tensor&), double lo = -2, double hi = 2) {
  return {std::move(name), {kind}, {{{3, 4}, lo, hi}}, [f](FunctionBuilder&, const std::vector<Tensor>& p) { return f(p[0]); }};
}
Row binary(std::string name, OpKind kind, Tensor (*f)(const Tensor&, const Tensor&), In a = {{3, 4}},
           In b = {{3, 4}}) {
  return {std::move(name), {kind}, {a, b}, [f](FunctionBuilder&, const std::vector<Tensor>& p) { return f(p[0], p[1]); }};
}

const ir::Sharding kRows{"m", {{"x"}, {}}, {}, {}};
const ir::Sharding kCols{"m", {{}, {"y"}}, {}, {}};
const ir::Sharding kBoth{"m", {{"x"}, {"y"}}, {}, {}};
const ir::Sharding kWhole{"m", {{}, {}}, {}, {}};

std::vector<Row> elementwise_rows() {
  using T = const Tensor&;
  return {
      unary("negate", OpKind::Negate, ir::negate), unary("abs", OpKind::Abs, ir::abs),
      unary("sign", OpKind::Sign, ir::sign), unary("exponential", OpKind::Exponential, ir::exp),
      unary("expm1", OpKind::ExponentialMinusOne, ir::expm1), unary("log", OpKind::Log, ir::log, 0.5, 3),
      unary("log1p", OpKind::LogPlusOne, ir::log1p, -0.5, 2), unary("tanh", OpKind::Tanh, ir::tanh),
      unary("logistic", OpKind::Logistic, ir::logistic), unary("sqrt", OpKind::Sqrt, ir::sqrt, 0.5, 3),
      unary("rsqrt", OpKind::Rsqrt, ir::rsqrt, 0.5, 3), unary("sine", OpKind::Sine, ir::sin),
      unary("cosine", OpKind::Cosine, ir::cos), unary("floor", OpKind::Floor, ir::floor),
      unary("ceil", OpKind::Ceil, ir::ceil),
      unary("round_nearest_even", OpKind::RoundNearestEven, ir::round_nearest_even),
      unary("round_nearest_afz", OpKind::RoundNearestAfz, ir::round_nearest_afz),
      unary("is_finite", OpKind::IsFinite, ir::is_finite),
      binary("add", OpKind::Add, [](T a, T b) { return a + b; }),
      binary("subtract", OpKind::Subtract, [](T a, T b) { return a - b; }),
      binary("multiply", OpKind::Multiply, [](T a, T b) { return a * b; }),
      binary("divide", OpKind::Divide, [](T a, T b) { return a / b; }),
      binary("remainder", OpKind::Remainder, ir::remainder, {{3, 4}, -5, 5}),
      binary("power", OpKind::Power, ir::pow, {{3, 4}, 0.5, 2}),
      binary("maximum", OpKind::Maximum, ir::maximum), binary("minimum", OpKind::Minimum, ir::minimum),
      binary("atan2", OpKind::Atan2, ir::atan2),
      binary("compare", OpKind::Compare, [](T a, T b) { return ir::compare(a, b, ComparisonDirection::LT); }),
      {"select", {OpKind::Select}, {{{3, 4}}, {{3, 4}}},
       [](FunctionBuilder& b, const std::vector<Tensor>& p) {
         Tensor pred = b.constant(ints(Type(ElementType::i1, {3, 4}), {1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0}));
         return ir::select(pred, p[0], p[1]);
       }},
      {"clamp_scalar_bounds", {OpKind::Clamp}, {{{}, -1, -0.5}, {{3, 4}}, {{}, 0.5, 1}},
       [](FunctionBuilder&, const std::vector<Tensor>& p) { return ir::clamp(p[0], p[1], p[2]); }},
      {"clamp_full_bounds", {OpKind::Clamp}, {{{3, 4}, -1, -0.5}, {{3, 4}}, {{3, 4}, 0.5, 1}},
       [](FunctionBuilder&, const std::vector<Tensor>& p) { return ir::clamp(p[0], p[1], p[2]); }},
      // f64 -> f32 -> f64 on values exact in f32: f is linear and the differences are exact.
      {"convert_f64_f32", {OpKind::Convert}, {{{3, 4}, -2, 2, true}},
       [](FunctionBuilder&, const std::vector<Tensor>& p) { return ir::convert(p[0], ElementType::f32); },
       1.0 / 1024},
  };
}

// More elementwise ops (#17): each on an interval where it is smooth (f64 operands, so real, imag
// and conj act on floats; their complex forms are refused, refusal_test.cpp).
std::vector<Row> more_elementwise_rows() {
  using P = const std::vector<Tensor>&;
  return {
      unary("tan", OpKind::Tan, ir::tan, -1, 1), unary("cbrt", OpKind::Cbrt, ir::cbrt, 0.5, 3),
      {"reduce_precision", {OpKind::ReducePrecision}, {{{3, 4}}},
       [](FunctionBuilder&, P p) { return ir::reduce_precision(p[0], 11, 45); }},
      unary("real", OpKind::Real, ir::real), unary("imag", OpKind::Imag, ir::imag),
      unary("conj", OpKind::Conj, ir::conj), unary("erf", OpKind::Erf, ir::erf),
      unary("erfc", OpKind::Erfc, ir::erfc), unary("erf_inv", OpKind::ErfInv, ir::erf_inv, -0.8, 0.8),
      unary("lgamma", OpKind::Lgamma, ir::lgamma, 0.5, 3), unary("sinh", OpKind::Sinh, ir::sinh),
      unary("cosh", OpKind::Cosh, ir::cosh), unary("asin", OpKind::Asin, ir::asin, -0.8, 0.8),
      unary("acos", OpKind::Acos, ir::acos, -0.8, 0.8), unary("atan", OpKind::Atan, ir::atan),
      unary("asinh", OpKind::Asinh, ir::asinh), unary("acosh", OpKind::Acosh, ir::acosh, 1.2, 3),
      unary("atanh", OpKind::Atanh, ir::atanh, -0.8, 0.8), unary("square", OpKind::Square, ir::square),
  };
}

std::vector<Row> movement_rows() {
  using P = const std::vector<Tensor>&;
  return {
      {"broadcast_expand_and_add_dims", {OpKind::BroadcastInDim}, {{{3, 1}}},
       [](FunctionBuilder&, P p) { return ir::broadcast_in_dim(p[0], {2, 3, 4}, {1, 2}); }},
      {"broadcast_transposing", {OpKind::BroadcastInDim}, {{{4, 3}}},
       [](FunctionBuilder&, P p) { return ir::broadcast_in_dim(p[0], {3, 2, 4}, {2, 0}); }},
      {"broadcast_scalar", {OpKind::BroadcastInDim}, {{{}}},
       [](FunctionBuilder&, P p) { return ir::broadcast_in_dim(p[0], {2, 3}, {}); }},
      {"reshape", {OpKind::Reshape}, {{{3, 4}}}, [](FunctionBuilder&, P p) { return ir::reshape(p[0], {2, 6}); }},
      {"transpose", {OpKind::Transpose}, {{{2, 3, 4}}},
       [](FunctionBuilder&, P p) { return ir::transpose(p[0], {2, 0, 1}); }},
      {"slice_strided", {OpKind::Slice}, {{{5, 7}}},
       [](FunctionBuilder&, P p) { return ir::slice(p[0], {1, 0}, {5, 7}, {2, 3}); }},
      {"dynamic_slice_clamped", {OpKind::DynamicSlice}, {{{5, 6}}},
       [](FunctionBuilder& b, P p) { return ir::dynamic_slice(p[0], {index(b, 4), index(b, 1)}, {3, 4}); }},
      {"dynamic_update_slice_clamped", {OpKind::DynamicUpdateSlice}, {{{5, 6}}, {{2, 3}}},
       [](FunctionBuilder& b, P p) { return ir::dynamic_update_slice(p[0], p[1], {index(b, 1), index(b, 5)}); }},
      {"concatenate", {OpKind::Concatenate}, {{{2, 3}}, {{2, 1}}, {{2, 2}}},
       [](FunctionBuilder&, P p) { return ir::concatenate({p[0], p[1], p[2]}, 1); }},
      {"pad_negative_and_interior", {OpKind::Pad}, {{{4, 5}}, {{}}},
       [](FunctionBuilder&, P p) { return ir::pad(p[0], p[1], {-1, 2}, {2, -3}, {1, 2}); }},
      {"pad_edges", {OpKind::Pad}, {{{3, 2}}, {{}}},
       [](FunctionBuilder&, P p) { return ir::pad(p[0], p[1], {1, 0}, {2, 1}); }},
      {"reverse", {OpKind::Reverse}, {{{2, 3, 4}}}, [](FunctionBuilder&, P p) { return ir::reverse(p[0], {0, 2}); }},
      // Rows 3 and 7 of a 5-row table; 7 is clamped to 4 and read twice with row 3.
      {"gather_rows_clamped", {OpKind::Gather}, {{{5, 3}}},
       [](FunctionBuilder& b, P p) {
         ir::GatherDims d{.offset_dims = {1}, .collapsed_slice_dims = {0}, .operand_batching_dims = {},
                          .start_indices_batching_dims = {}, .start_index_map = {0}, .index_vector_dim = 1};
         return ir::gather(p[0], i32s(b, {4}, {3, 0, 3, 7}), d, {1, 3});
       }},
      // Windows of 2 rows from each batch of x [2, 6, 3], starts 0, 5 (clamped to 4), 2, -1 (to 0).
      {"gather_batched_windows", {OpKind::Gather}, {{{2, 6, 3}}},
       [](FunctionBuilder& b, P p) {
         ir::GatherDims d{.offset_dims = {2, 3}, .collapsed_slice_dims = {}, .operand_batching_dims = {0},
                          .start_indices_batching_dims = {0},
                          .start_index_map = {1}, .index_vector_dim = 2};
         return ir::gather(p[0], i32s(b, {2, 2, 1}, {0, 5, 2, -1}), d, {1, 2, 3});
       }},
      // Rows 1, 4, 1 and 9 (out of bounds: skipped) of x [6, 3].
      {"scatter_add", {OpKind::Scatter}, {{{6, 3}}, {{4, 3}}},
       [](FunctionBuilder& b, P p) {
         ir::ScatterDims d{.update_window_dims = {1}, .inserted_window_dims = {0}, .input_batching_dims = {},
                           .scatter_indices_batching_dims = {}, .scatter_dims_to_operand_dims = {0},
                           .index_vector_dim = 1};
         return ir::scatter(p[0], i32s(b, {4, 1}, {1, 4, 1, 9}), p[1], d, OpKind::Add);
       }},
      {"scatter_add_batched", {OpKind::Scatter}, {{{2, 5, 3}}, {{2, 2, 3}}},
       [](FunctionBuilder& b, P p) {
         ir::ScatterDims d{.update_window_dims = {2}, .inserted_window_dims = {1}, .input_batching_dims = {0},
                           .scatter_indices_batching_dims = {0}, .scatter_dims_to_operand_dims = {1},
                           .index_vector_dim = 2};
         return ir::scatter(p[0], i32s(b, {2, 2, 1}, {4, 0, 2, 2}), p[1], d, OpKind::Add);
       }},
      // Windows of 2 rows at 0, 5 (half out of bounds: row 5 lands, row 6 does not) and 0 again
      // (the later update wins).
      {"scatter_replace_windows", {OpKind::Scatter}, {{{6, 4}}, {{3, 2, 4}}},
       [](FunctionBuilder& b, P p) {
         ir::ScatterDims d{.update_window_dims = {1, 2}, .inserted_window_dims = {}, .input_batching_dims = {},
                           .scatter_indices_batching_dims = {}, .scatter_dims_to_operand_dims = {0},
                           .index_vector_dim = 1};
         return ir::scatter(p[0], i32s(b, {3, 1}, {0, 5, 0}), p[1], d, OpKind::Return);
       }},
      {"optimization_barrier", {OpKind::OptimizationBarrier}, {{{3, 4}}, {{3, 4}}},
       [](FunctionBuilder&, P p) {
         std::vector<Tensor> r = ir::optimization_barrier({ir::tanh(p[0]), p[1]});
         return r[0] * r[1];
       }},
      {"sharding_constraint", {OpKind::ShardingConstraint}, {{{4, 4}}},
       [](FunctionBuilder&, P p) { return ir::constrain(p[0] * p[0], kRows); }},
      // Shardy's propagation ops: identities on values (a barrier each way, an edge with and one
      // without a layout, a group that yields nothing).
      {"sdy_propagation_ops", {OpKind::PropagationBarrier, OpKind::DataFlowEdge, OpKind::ShardingGroup},
       {{{4, 4}}},
       [](FunctionBuilder&, P p) {
         Tensor a = ir::propagation_barrier(ir::tanh(p[0]), "FORWARD");
         Tensor e = ir::data_flow_edge(a * p[0], kRows);
         ir::sharding_group(a, 0);
         ir::sharding_group(e, 0);
         return ir::data_flow_edge(ir::propagation_barrier(e, "BACKWARD")) * ir::propagation_barrier(p[0], "NONE");
       }},
      // One reshard from a stated layout (dx goes back to it), one from an unknown one.
      {"reshard", {OpKind::Reshard}, {{{4, 4}}},
       [](FunctionBuilder&, P p) { return ir::reshard(ir::constrain(ir::tanh(p[0]), kRows), kCols) * ir::reshard(p[0], kBoth); }},
      // Shardy's explicit collectives, each moving the layout on from the last (identities on the
      // global value; their adjoints move the cotangent back, their batched forms gain dimension 0).
      {"sdy_explicit_collectives",
       {OpKind::SdyAllGather, OpKind::SdyAllSlice, OpKind::SdyAllToAll, OpKind::SdyCollectivePermute,
        OpKind::SdyAllReduce, OpKind::SdyReduceScatter},
       {{{4, 4}}},
       [](FunctionBuilder&, P p) {
         Tensor a = ir::constrain(ir::tanh(p[0]), kBoth);
         Tensor g = ir::sdy_all_gather(a, {{"x"}, {}}, kCols);
         Tensor s = ir::sdy_all_slice(g, {{"x"}, {}}, kBoth);
         Tensor t = ir::sdy_all_to_all(s, {{{"x"}, 0, 1}}, ir::Sharding{"m", {{}, {"y", "x"}}, {}, {}});
         Tensor q = ir::sdy_collective_permute(t, ir::Sharding{"m", {{}, {"x", "y"}}, {}, {}});
         Tensor u = ir::sdy_all_gather(q, {{}, {"y"}}, ir::Sharding{"m", {{}, {"x"}}, {}, {}});
         Tensor r = ir::sdy_all_reduce(u * p[0], {"y"}, ir::Sharding{"m", {{}, {"x"}}, {}, {}});
         return ir::sdy_reduce_scatter(r, {{"y"}, {}}, ir::Sharding{"m", {{"y"}, {"x"}}, {}, {}});
       }},
      // all_to_all with two parameters (as in Shardy's sdy_all_to_all.mlir), times an sdy.constant.
      {"sdy_all_to_all_two_params", {OpKind::SdyAllToAll}, {{{2, 2, 2, 2}}},
       [](FunctionBuilder& b, P p) {
         Tensor a = ir::constrain(p[0], ir::Sharding{"m", {{"x"}, {}, {"y"}, {}}, {}, {}});
         Tensor t = ir::sdy_all_to_all(a, {{{"x"}, 0, 1}, {{"y"}, 2, 3}},
                                       ir::Sharding{"m", {{}, {"x"}, {}, {"y"}}, {}, {}});
         Tensor c = ir::sdy_constant(b, random_f64({2, 2, 2, 2}, 7, -1, 1),
                                     ir::Sharding{"m", {{"x"}, {}, {}, {}}, {}, {}});
         return ir::sin(t) * c;
       }},
      {"manual_computation", {OpKind::ManualComputation}, {{{4, 4}}, {{4, 4}}},
       [](FunctionBuilder&, P p) {
         auto body = [](ir::Builder&, const std::vector<Tensor>& l) { return std::vector<Tensor>{ir::tanh(l[0]) * l[1]}; };
         return ir::manual({p[0], p[1]}, {kBoth, kBoth}, {kBoth}, {"x", "y"}, body)[0];
       }},
      // A psum in the body (its adjoint is a psum too), and a replicated result off the loss's path.
      {"manual_computation_psum", {OpKind::ManualComputation}, {{{4, 4}}},
       [](FunctionBuilder&, P p) {
         auto body = [](ir::Builder&, const std::vector<Tensor>& l) {
           return std::vector<Tensor>{ir::all_reduce(ir::sin(l[0]), {{0, 1}, {2, 3}}), l[0] * 2.0};
         };
         return ir::manual({p[0]}, {kBoth}, {kBoth, kWhole}, {"x", "y"}, body)[0];
       }},
  };
}

std::vector<Row> reduce_rows() {
  using P = const std::vector<Tensor>&;
  return {
      {"reduce_add_with_init", {OpKind::Reduce}, {{{2, 3, 4}}, {{}}},
       [](FunctionBuilder&, P p) { return ir::reduce(p[0], p[1], {0, 2}, OpKind::Add); }},
      {"reduce_max", {OpKind::Reduce}, {{{3, 4}}}, [](FunctionBuilder&, P p) { return ir::reduce_max(p[0], {1}); }},
      {"reduce_min_all", {OpKind::Reduce}, {{{3, 4}}}, [](FunctionBuilder&, P p) { return ir::reduce_min(p[0], {0, 1}); }},
      // The init value is the maximum of some rows.
      {"reduce_max_with_init", {OpKind::Reduce}, {{{6, 3}}, {{}, 1, 1.5}},
       [](FunctionBuilder&, P p) { return ir::reduce(p[0], p[1], {1}, OpKind::Maximum); }},
      {"dot_general_batched", {OpKind::DotGeneral}, {{{2, 3, 4}}, {{4, 2, 5}}},
       [](FunctionBuilder&, P p) {
         return ir::dot_general(p[0], p[1], {.lhs_batch = {0}, .rhs_batch = {1}, .lhs_contracting = {2}, .rhs_contracting = {0}});
       }},
      {"dot_general_two_contractions", {OpKind::DotGeneral}, {{{3, 4, 5}}, {{5, 2, 4}}},
       [](FunctionBuilder&, P p) {
         return ir::dot_general(p[0], p[1], {.lhs_batch = {}, .rhs_batch = {}, .lhs_contracting = {1, 2}, .rhs_contracting = {2, 0}});
       }},
      {"matmul", {OpKind::DotGeneral}, {{{3, 4}}, {{4, 2}}}, [](FunctionBuilder&, P p) { return ir::matmul(p[0], p[1]); }},
      // f32 operands accumulated into f64; values exact in f32, so f is exact and bilinear.
      {"dot_general_f32_into_f64", {OpKind::DotGeneral, OpKind::Convert}, {{{3, 4}, -2, 2, true}, {{4, 2}, -2, 2, true}},
       [](FunctionBuilder& b, P p) {
         ir::AttrMap a;
         a.set("dot_dimension_numbers", ir::DotDims{{}, {}, {1}, {0}});
         return b.emit1(OpKind::DotGeneral, {ir::convert(p[0], ElementType::f32), ir::convert(p[1], ElementType::f32)},
                        std::move(a), {ir::f64({3, 2})});
       },
       1.0 / 1024},
  };
}

}  // namespace

std::vector<Row> all_rows() {
  std::vector<Row> rows = elementwise_rows();
  for (auto&& more : {more_elementwise_rows(), movement_rows(), reduce_rows(), window_rows(), branch_rows(), linalg_rows(), effects_rows(), numeric_rows()})
    rows.insert(rows.end(), more.begin(), more.end());
  return rows;
}

void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

std::vector<Literal> row_arguments(const Row& row) {
  std::vector<Literal> args;
  for (size_t i = 0; i < row.inputs.size(); ++i) {
    const In& in = row.inputs[i];
    args.push_back(random_f64(in.shape, std::hash<std::string>{}(row.name) + i, in.lo, in.hi, in.dyadic));
  }
  return args;
}

ir::Module row_module(const std::string& name) {
  ir::Module m(name);
  m.add_mesh({"m", {{"x", 2}, {"y", 2}}, {}});
  return m;
}

const ir::Function& build_row(ir::Module& m, const std::string& name, const Row& row,
                              const std::vector<Literal>& args,
                              const std::function<Tensor(FunctionBuilder&, Tensor)>& finish) {
  return ir::build_function(m, name, [&](FunctionBuilder& b) {
    std::vector<Tensor> params;
    for (const Literal& a : args) params.push_back(b.param(a.type()));
    Tensor out = row.build(b, params);
    if (out.element() != ElementType::f64) out = ir::convert(out, ElementType::f64);
    return finish(b, out);
  });
}

}  // namespace tessera::autodiff::testing
