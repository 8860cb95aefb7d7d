// One print rule per op, expanded from ops.def: a row without a rule in `rules` below does not
// compile.
//
// Each rule writes what follows `%r = ` in StableHLO's or Shardy's pretty form, spaced exactly as
// their assembly formats print it (`stablehlo.compare  GT, %a, %b,  FLOAT : ...` has two spaces
// before each enum). Attributes a pretty form does not spell go in a trailing `{...}`. Ops without
// a pretty form, and ops whose attributes a pretty form needs are missing, print in MLIR's generic
// form, inherent attributes as properties: `"stablehlo.gather"(%0, %1) <{...}> ({regions}) {...}
// : (...) -> ...`.
#include <algorithm>
#include <iterator>

#include "ir/window.h"
#include "stablehlo/print_internal.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo::print_impl {

using ir::Op;
using ir::OpKind;

std::string except(const Op& op, std::initializer_list<std::string_view> elided) {
  return attr_dict_except(op.attrs(), elided);
}

// ---- The generic form ----

void generic(Printer& p, const Op& op) {
  p << quoted(op.name()) << "(";
  p.values(op.operands());
  p << ")";
  auto inherent = [](const std::string& n) { return n.find('.') == std::string::npos; };
  std::string props = attr_dict(op.attrs(), inherent);
  if (!props.empty()) p << " <" << std::string_view(props).substr(1) << ">";
  for (size_t i = 0; i < op.regions().size(); ++i) {
    p << (i == 0 ? " (" : ", ");
    p.region(op.region(i), /*entry_arguments=*/true);
  }
  if (!op.regions().empty()) p << ")";
  p << attr_dict(op.attrs(), [&](const std::string& n) { return !inherent(n); }) << " : ";
  p.functional_type(op);
}

// ---- Shared pieces of pretty forms ----

// `t` when every operand type equals the result type, else `(t1, t2) -> t3`.
void same_operands_and_result_type(Printer& p, const Op& op) {
  const ir::Type& result = op.result()->type();
  for (const ir::Value* v : op.operands())
    if (v->type() != result) return p.functional_type(op);
  p << ir::to_string(result);
}

namespace {

using Rule = void (*)(Printer&, const Op&);

void functional_type(Printer& p, const Op& op) { p.functional_type(op); }
// select: `pred_type, result_type` when both branches have the result type.
void select_type(Printer& p, const Op& op) {
  const ir::Type& result = op.result()->type();
  if (op.operands().size() != 3 || op.operand(1)->type() != result ||
      op.operand(2)->type() != result)
    return p.functional_type(op);
  p << ir::to_string(op.operand(0)->type()) << ", " << ir::to_string(result);
}

// `name %a, %b{attrs} : <types>`: elementwise ops (with same_operands_and_result_type), select,
// and the ops whose pretty form is just their operands (reshape, bitcast_convert, ...).
template <void (*Types)(Printer&, const Op&)>
void operands_form(Printer& p, const Op& op) {
  p << op.name() << " ";
  p.values(op.operands());
  p << except(op, {}) << " : ";
  Types(p, op);
}
constexpr Rule elementwise = operands_form<same_operands_and_result_type>,
               operands_only = operands_form<functional_type>,
               select_form = operands_form<select_type>;

void result_type(Printer& p, const Op& op) { p << ir::to_string(op.result()->type()); }

// `name{attrs} : type` for ops with neither operands nor attributes of their own.
void nullary(Printer& p, const Op& op) {
  p << op.name() << except(op, {}) << " : ";
  result_type(p, op);
}

// `name %x, %y, <keyword> = [..]{attrs} : <types>` for the ops whose one attribute is a list.
template <const char* Keyword, const char* Attribute, void (*Types)(Printer&, const Op&)>
void operands_and_list(Printer& p, const Op& op) {
  const auto* list = op.attrs().find<std::vector<int64_t>>(Attribute);
  if (!list) return generic(p, op);
  p << op.name() << " ";
  p.values(op.operands());
  p << ", " << Keyword << " = " << int_list(*list) << except(op, {Attribute}) << " : ";
  Types(p, op);
}
constexpr char kDims[] = "dims", kSizes[] = "sizes";
constexpr char kBroadcastDimensions[] = "broadcast_dimensions", kPermutation[] = "permutation",
               kDimensions[] = "dimensions", kSliceSizes[] = "slice_sizes";
constexpr Rule broadcast_in_dim = operands_and_list<kDims, kBroadcastDimensions, functional_type>,
               transpose = operands_and_list<kDims, kPermutation, functional_type>,
               reverse = operands_and_list<kDims, kDimensions, result_type>,
               dynamic_slice = operands_and_list<kSizes, kSliceSizes, functional_type>;

// ---- Leaves ----

void constant(Printer& p, const Op& op) {
  const auto* value = op.attrs().find<ir::Literal>("value");
  if (!value || value->type() != op.result()->type()) return generic(p, op);
  p << op.name() << except(op, {"value"}) << " " << dense(*value);
}

void iota(Printer& p, const Op& op) {
  const auto* dim = op.attrs().find<int64_t>("iota_dimension");
  if (!dim) return generic(p, op);
  p << op.name() << " dim = " << std::to_string(*dim) << except(op, {"iota_dimension"}) << " : ";
  result_type(p, op);
}

// ---- Compare ----

void compare(Printer& p, const Op& op) {
  const auto* direction = op.attrs().find<ir::ComparisonDirection>("comparison_direction");
  if (!direction) return generic(p, op);
  p << op.name() << "  " << ir::to_string(*direction) << ", ";
  p.values(op.operands());
  if (const auto* type = op.attrs().find<ir::CompareType>("compare_type"))
    p << ",  " << ir::to_string(*type);
  p << except(op, {"comparison_direction", "compare_type"}) << " : ";
  p.functional_type(op);
}

// ---- Data movement ----

void slice(Printer& p, const Op& op) {
  const auto* start = op.attrs().find<std::vector<int64_t>>("start_indices");
  const auto* limit = op.attrs().find<std::vector<int64_t>>("limit_indices");
  const auto* strides = op.attrs().find<std::vector<int64_t>>("strides");
  if (!start || !limit || !strides || start->size() != limit->size() ||
      start->size() != strides->size())
    return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << " [";
  for (size_t d = 0; d < start->size(); ++d) {
    p << (d ? ", " : "") << fmt::format("{}:{}", (*start)[d], (*limit)[d]);
    if ((*strides)[d] != 1) p << fmt::format(":{}", (*strides)[d]);
  }
  p << "]" << except(op, {"start_indices", "limit_indices", "strides"}) << " : ";
  p.functional_type(op);
}

void concatenate(Printer& p, const Op& op) {
  const auto* dim = op.attrs().find<int64_t>("dimension");
  if (!dim) return generic(p, op);
  p << op.name() << " ";
  p.values(op.operands());
  p << ", dim = " << std::to_string(*dim) << except(op, {"dimension"}) << " : ";
  p.functional_type(op);
}

void pad(Printer& p, const Op& op) {
  const auto* low = op.attrs().find<std::vector<int64_t>>("edge_padding_low");
  const auto* high = op.attrs().find<std::vector<int64_t>>("edge_padding_high");
  const auto* interior = op.attrs().find<std::vector<int64_t>>("interior_padding");
  if (!low || !high || !interior) return generic(p, op);
  p << op.name() << " ";
  p.values(op.operands());
  p << ", low = " << int_list(*low) << ", high = " << int_list(*high)
    << ", interior = " << int_list(*interior)
    << except(op, {"edge_padding_low", "edge_padding_high", "interior_padding"}) << " : ";
  p.functional_type(op);
}

// ---- Reductions and contractions ----

// The PrecisionConfig list `[DEFAULT, HIGHEST]` when a parsed `precision_config` holds
// `[#stablehlo<precision DEFAULT>, ...]`; empty when it holds something else.
std::string precision_list(const ir::Opaque& config) {
  std::string_view text = config.text;
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return "";
  text = text.substr(1, text.size() - 2);
  constexpr std::string_view kPrefix = "#stablehlo<precision ";
  std::string out;
  while (!text.empty()) {
    size_t end = text.find('>');
    if (text.substr(0, kPrefix.size()) != kPrefix || end == std::string_view::npos) return "";
    out +=
        (out.empty() ? "" : ", ") + std::string(text.substr(kPrefix.size(), end - kPrefix.size()));
    text.remove_prefix(end + 1);
    if (text.substr(0, 2) == ", ")
      text.remove_prefix(2);
    else if (!text.empty())
      return "";
  }
  return "[" + out + "]";
}

void dot_general(Printer& p, const Op& op) {
  const auto* d = op.attrs().find<ir::DotDims>("dot_dimension_numbers");
  if (!d) return generic(p, op);
  p << op.name() << " ";
  p.values(op.operands());
  p << ", ";
  if (!d->lhs_batch.empty() || !d->rhs_batch.empty())
    p << "batching_dims = " << int_list(d->lhs_batch) << " x " << int_list(d->rhs_batch) << ", ";
  p << "contracting_dims = " << int_list(d->lhs_contracting) << " x "
    << int_list(d->rhs_contracting);
  const auto* config = op.attrs().find<ir::Opaque>("precision_config");
  std::string precision = config ? precision_list(*config) : "";
  if (!precision.empty()) p << ", precision = " << precision;
  p << (precision.empty() ? except(op, {"dot_dimension_numbers"})
                          : except(op, {"dot_dimension_numbers", "precision_config"}))
    << " : ";
  p.functional_type(op);
}

// StableHLO's test for `applies <op>`: one input, and a body that is a single commutative binary
// op of this dialect on the block arguments in order, on scalars of the input's element type,
// returned as is.
bool reduce_is_compact(const Op& op) {
  if (op.operands().size() != 2 || op.regions().size() != 1) return false;
  const ir::Block& body = op.region(0);
  if (body.ops().size() != 2 || body.arguments().size() != 2) return false;
  const Op& inner = *body.ops()[0];
  const Op& ret = *body.ops()[1];
  ir::Type scalar(op.operand(0)->type().element, {});
  if (!ir::has_trait(inner.kind(), ir::kCommutative) || ir::has_trait(inner.kind(), ir::kShardy) ||
      inner.operands().size() != 2 || inner.num_results() != 1 || !inner.regions().empty())
    return false;
  for (const ir::Value* v : inner.operands())
    if (v->type() != scalar) return false;
  return inner.result()->type() == scalar && inner.operand(0) == body.argument(0) &&
         inner.operand(1) == body.argument(1) && ret.kind() == OpKind::Return &&
         ret.operands().size() == 1 && ret.operand(0) == inner.result();
}

// `stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [0] : ...` when the
// body allows it; otherwise stablehlo-opt's `reducer` form (JAX's argmax prints so):
// `stablehlo.reduce(%a init: %b), (%c init: %d) across dimensions = [1] : (...) -> (...)`, then
// on the next line ` reducer(%x: t, %y: t) (%z: u, %w: u)  {body}`, one (lhs, rhs) pair per input.
void reduce(Printer& p, const Op& op) {
  const auto* dims = op.attrs().find<std::vector<int64_t>>(kDimensions);
  size_t n = op.operands().size() / 2;
  if (!dims || op.regions().size() != 1 || n == 0 || op.operands().size() != 2 * n ||
      op.region(0).arguments().size() != 2 * n)
    return generic(p, op);
  bool compact = reduce_is_compact(op);
  p << op.name();
  for (size_t i = 0; i < n; ++i) {
    p << (i ? ", (" : "(");
    p.value(op.operand(i));
    p << " init: ";
    p.value(op.operand(n + i));
    p << ")";
  }
  if (compact) p << " applies " << keyword_or_string(op.region(0).ops()[0]->name());
  p << " across dimensions = " << int_list(*dims) << except(op, {kDimensions}) << " : ";
  p.functional_type(op);
  if (compact) return;
  const ir::Block& body = op.region(0);
  p.newline();
  p << " reducer";
  for (size_t i = 0; i < n; ++i) {
    p << (i ? " (" : "(");
    p.block_argument(body.argument(i));
    p << ", ";
    p.block_argument(body.argument(n + i));
    p << ")";
  }
  p << "  ";
  p.region(body, /*entry_arguments=*/false);
}

// ---- Windows and convolution ----

// `stablehlo.convolution(%a, %b) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window =
// {stride = [2, 2], pad = [[0, 1], [0, 1]]} {attrs} : (t, t) -> t` (and dynamic_conv's, with its
// padding operand third), each window field printed
// when its attribute is there; the generic form when an attribute has a shape the pretty form
// cannot spell.
void convolution(Printer& p, const Op& op) {
  const auto* d = op.attrs().find<ir::ConvDims>("dimension_numbers");
  size_t rank = d ? d->input_spatial.size() : 0;
  bool reversal_ok = true;
  std::vector<bool> reversal = ir::bool_array(op.attrs(), "window_reversal", reversal_ok);
  bool padding_ok = !op.attrs().has("padding") ||
                    ir::padding_shape(op.attrs(), "padding") ==
                        std::vector<int64_t>{static_cast<int64_t>(rank), 2};
  auto list_ok = [&](const char* name) {
    return !op.attrs().has(name) || op.attrs().find<std::vector<int64_t>>(name) != nullptr;
  };
  size_t operands = op.kind() == ir::OpKind::DynamicConv ? 3 : 2;  // dynamic_conv's padding is its third
  if (!d || op.operands().size() != operands || !reversal_ok || !padding_ok || !list_ok("window_strides") ||
      !list_ok("lhs_dilation") || !list_ok("rhs_dilation"))
    return generic(p, op);
  p << op.name() << "(";
  p.values(op.operands());
  p << ") dim_numbers = " << conv_dims_text(*d) << ", window = {";
  std::string fields;
  auto field = [&](std::string_view name, const std::string& text) {
    fields += fmt::format("{}{} = {}", fields.empty() ? "" : ", ", name, text);
  };
  if (const auto* v = op.attrs().find<std::vector<int64_t>>("window_strides")) field("stride", int_list(*v));
  if (op.attrs().has("padding")) {
    ir::Window w = ir::read_window(op.attrs(), ir::kConvolutionWindow, rank, std::vector<int64_t>(rank, 1));
    std::string rows;
    for (size_t i = 0; i < rank; ++i)
      rows += fmt::format("{}[{}, {}]", i ? ", " : "", w.pad_lo[i], w.pad_hi[i]);
    field("pad", "[" + rows + "]");
  }
  if (const auto* v = op.attrs().find<std::vector<int64_t>>("lhs_dilation")) field("lhs_dilate", int_list(*v));
  if (const auto* v = op.attrs().find<std::vector<int64_t>>("rhs_dilation")) field("rhs_dilate", int_list(*v));
  if (op.attrs().has("window_reversal")) {
    std::string items;
    for (bool b : reversal) items += std::string(items.empty() ? "" : ", ") + (b ? "true" : "false");
    field("reverse", "[" + items + "]");
  }
  p << fields << "}"
    << except(op, {"dimension_numbers", "window_strides", "padding", "lhs_dilation", "rhs_dilation",
                   "window_reversal"})
    << " : ";
  p.functional_type(op);
}

// ---- Control ----

void while_loop(Printer& p, const Op& op) {
  if (op.regions().size() != 2 || op.region(1).arguments().size() != op.operands().size())
    return generic(p, op);
  const ir::Block& body = op.region(1);
  p << op.name() << "(";
  for (size_t i = 0; i < op.operands().size(); ++i) {
    p << (i ? ", " : "");
    p.value(body.argument(i));
    p << " = ";
    p.value(op.operand(i));
  }
  p << ")";
  if (!op.operands().empty()) {
    p << " : ";
    p.types(op.operand_types());
  }
  std::string attrs = except(op, {});
  if (!attrs.empty()) p << " attributes" << attrs;
  p.newline();
  p << " cond ";
  p.region(op.region(0), /*entry_arguments=*/false);
  p << " do ";
  p.region(body, /*entry_arguments=*/false);
}

void optimization_barrier(Printer& p, const Op& op) {
  p << op.name() << except(op, {});
  if (op.operands().empty()) {
    p << "()";
    return;
  }
  p << " ";
  p.values(op.operands());
  p << " : ";
  p.types(op.operand_types());
}

// `return`, `stablehlo.return` or `sdy.return`, by the op that holds the block.
void terminator(Printer& p, const Op& op) {
  const ir::Op* holder = op.parent ? op.parent->parent_op : nullptr;
  p << (holder == nullptr                             ? "return"
        : holder->kind() == OpKind::ManualComputation ? "sdy.return"
                                                      : "stablehlo.return");
  if (!op.operands().empty()) {
    p << " ";
    p.values(op.operands());
  }
  p << except(op, {});
  if (!op.operands().empty()) {
    p << " : ";
    p.types(op.operand_types());
  }
}

// ---- Calls and the test harness ----

// `call @f(%a){attrs} : (t) -> t` (func's dialect prefix is implied inside func.func), and
// `stablehlo.custom_call @target(%a){attrs} : (t) -> t`.
template <const char* Keyword, const char* Attribute>
void call_form(Printer& p, const Op& op) {
  const auto* target = op.attrs().find<std::string>(Attribute);
  if (!target) return generic(p, op);
  p << Keyword << " " << symbol(*target) << "(";
  p.values(op.operands());
  p << ")" << except(op, {Attribute}) << " : ";
  p.functional_type(op);
}
constexpr char kCall[] = "call", kCallee[] = "callee", kCustomCall[] = "stablehlo.custom_call",
               kTarget[] = "call_target_name";

// `check.expect_eq_const %x, dense<...> : tensor<...>{attrs}`
void expect_const(Printer& p, const Op& op) {
  const auto* value = op.attrs().find<ir::Literal>("value");
  if (!value) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << ", " << dense(*value) << except(op, {"value"});
}

// `check.expect_eq %a, %b{attrs} : t` (one type when both agree): checks have no results.
void check_form(Printer& p, const Op& op) {
  p << op.name() << " ";
  p.values(op.operands());
  p << except(op, {}) << " : ";
  std::vector<ir::Type> types = op.operand_types();
  bool same = std::all_of(types.begin(), types.end(), [&](const ir::Type& t) { return t == types[0]; });
  if (same && !types.empty()) types.resize(1);
  p.types(types);
}

// ---- More elementwise ops (#17) ----

// `stablehlo.complex %re, %im : tensor<2xcomplex<f32>>` when both parts have the result's part type.
void complex(Printer& p, const Op& op) {
  const ir::Type& result = op.result()->type();
  ir::Type part = result.with_element(ir::real_type(result.element));
  if (op.operands().size() != 2 || op.operand(0)->type() != part || op.operand(1)->type() != part)
    return operands_only(p, op);
  p << op.name() << " ";
  p.values(op.operands());
  p << except(op, {}) << " : " << ir::to_string(result);
}

// ---- The table ----

namespace rules {
constexpr Rule Constant = constant, Iota = iota, ReplicaId = nullary, PartitionId = nullary;
constexpr Rule Negate = elementwise, Abs = elementwise, Sign = elementwise,
               Exponential = elementwise, ExponentialMinusOne = elementwise, Log = elementwise,
               LogPlusOne = elementwise, Tanh = elementwise, Logistic = elementwise,
               Sqrt = elementwise, Rsqrt = elementwise, Sine = elementwise, Cosine = elementwise,
               Floor = elementwise, Ceil = elementwise, RoundNearestEven = elementwise,
               RoundNearestAfz = elementwise, IsFinite = elementwise, Not = elementwise,
               Convert = elementwise, BitcastConvert = operands_only;
constexpr Rule Add = elementwise, Subtract = elementwise, Multiply = elementwise,
               Divide = elementwise, Remainder = elementwise, Power = elementwise,
               Maximum = elementwise, Minimum = elementwise, Atan2 = elementwise, And = elementwise,
               Or = elementwise, Xor = elementwise, ShiftLeft = elementwise,
               ShiftRightLogical = elementwise, ShiftRightArithmetic = elementwise,
               Compare = compare, Clamp = elementwise, Select = select_form;
constexpr Rule Tan = elementwise, Cbrt = elementwise, Popcnt = elementwise,
               CountLeadingZeros = elementwise, ReducePrecision = reduce_precision,
               Complex = complex, Real = elementwise, Imag = elementwise;
constexpr Rule Erf = chlo_form, Erfc = chlo_form, ErfInv = chlo_form, Lgamma = chlo_form,
               Digamma = chlo_form, BesselI1e = chlo_form, Sinh = chlo_form, Cosh = chlo_form,
               Asin = chlo_form, Acos = chlo_form, Atan = chlo_form, Asinh = chlo_form,
               Acosh = chlo_form, Atanh = chlo_form, Square = chlo_form, Conj = chlo_form,
               IsInf = chlo_form, IsPosInf = chlo_form, IsNegInf = chlo_form,
               NextAfter = chlo_form;
constexpr Rule BroadcastInDim = broadcast_in_dim, Reshape = operands_only, Transpose = transpose,
               Slice = slice, DynamicSlice = dynamic_slice, DynamicUpdateSlice = operands_only,
               Concatenate = concatenate, Pad = pad, Reverse = reverse, Gather = generic,
               Scatter = generic;
constexpr Rule Reduce = reduce, DotGeneral = dot_general;
// Windows and convolution. reduce_window, select_and_scatter and sort print in the generic form,
// as stablehlo-opt prints them.
constexpr Rule Convolution = convolution, ReduceWindow = generic, SelectAndScatter = generic,
               Sort = generic;
// top_k and cholesky in their own forms; triangular_solve in the generic form, as stablehlo-opt
// prints it.
constexpr Rule TopK = top_k, Cholesky = cholesky, TriangularSolve = generic;
// if and case print in the generic form, as stablehlo-opt prints them.
constexpr Rule If = generic, Case = generic;
constexpr Rule While = while_loop, OptimizationBarrier = optimization_barrier, Return = terminator;
constexpr Rule AllReduce = generic, AllGather = generic, ReduceScatter = generic,
               AllToAll = generic, CollectivePermute = generic, CollectiveBroadcast = generic,
               CollectiveReduce = generic;
constexpr Rule ShardingConstraint = sharding_op, Reshard = sharding_op,
               ManualComputation = manual_computation;
constexpr Rule SdyAllGather = sdy_all_gather, SdyAllSlice = sdy_all_slice,
               SdyReduceScatter = sdy_reduce_scatter, SdyAllReduce = sdy_all_reduce,
               SdyAllToAll = sdy_all_to_all, SdyCollectivePermute = sdy_collective_permute,
               SdyConstant = constant, PropagationBarrier = propagation_barrier,
               DataFlowEdge = data_flow_edge, ShardingGroup = sharding_group;
// Issue #17's rows print in the generic form until their pretty forms land.
constexpr Rule AfterAll = result_type_form, CreateToken = result_type_form, Tuple = result_type_form,
               GetTupleElement = get_tuple_element, Composite = composite, Map = generic;
constexpr Rule Infeed = generic, Outfeed = generic, Send = generic, Recv = generic,
               AsyncStart = generic, AsyncDone = generic,
               GetDimensionSize = get_dimension_size, Scan = scan_form, Probe = probe_form,
               ExpectSerializedEq = probe_form;
constexpr Rule Fft = fft, Rng = rng, RngBitGenerator = rng_bit_generator, BatchNormInference = generic,
               BatchNormTraining = generic, BatchNormGrad = generic, Mulhi = chlo_form,
               Polygamma = chlo_form, Zeta = chlo_form, RaggedDot = generic;
constexpr Rule DynamicBroadcastInDim = broadcast_in_dim, DynamicConv = convolution, DynamicGather = generic,
               DynamicIota = dynamic_iota, DynamicPad = operands_only, DynamicReshape = operands_only,
               RealDynamicSlice = operands_only;
constexpr Rule UniformQuantize = operands_only, UniformDequantize = operands_only;
constexpr Rule Call = call_form<kCall, kCallee>, CustomCall = call_form<kCustomCall, kTarget>,
               RunParallel = generic, ExpectEqConst = expect_const,
               ExpectAlmostEqConst = expect_const, ExpectEq = check_form,
               ExpectAlmostEq = check_form, ExpectClose = check_form;
}  // namespace rules

constexpr Rule kRules[] = {
#define OP(e, spelling, arity, traits) rules::e,
#include "ir/ops.def"
#undef OP
};
static_assert(std::size(kRules) == ir::kNumOpKinds);

}  // namespace

void print_op_body(Printer& p, const Op& op) { kRules[static_cast<size_t>(op.kind())](p, op); }

}  // namespace tessera::stablehlo::print_impl
