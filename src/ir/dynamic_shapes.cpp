// static_form(): each dynamic op as its static op once its shape operands' values are known (see
// dynamic_shapes.h). The static op's own shape rule then checks what the dynamic op's rule could
// not (sizes, bounds of slices, gather's slice sizes), with its own messages.
#include "ir/dynamic_shapes.h"

#include <algorithm>

#include "ir/shape_rules.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::ir {
namespace {

std::string list(const std::vector<int64_t>& v) { return "[" + support::join(v, ", ") + "]"; }

// The integer values of a 1-D shape operand.
std::vector<int64_t> values_of(OpKind kind, size_t i, const Literal& x) {
  if (!is_integer(x.element()) || x.type().rank() > 1)
    support::fail("{}: operand {} ({}) must be a 1-D integer tensor", spelling(kind), i, to_string(x.type()));
  std::vector<int64_t> v(static_cast<size_t>(x.num_elements()));
  for (int64_t k = 0; k < x.num_elements(); ++k) v[static_cast<size_t>(k)] = x.get_int(k);
  return v;
}

// The result shape a shape operand gives must agree with the declared result where that is static.
Type shaped(OpKind kind, const Type& declared, const std::vector<int64_t>& shape) {
  if (static_cast<int64_t>(shape.size()) != declared.rank())
    support::fail("{}: the shape operand has {} values for result {} of rank {}", spelling(kind), shape.size(),
                  to_string(declared), declared.rank());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0)
      support::fail("{}: the shape operand's value {} has a negative size", spelling(kind), list(shape));
    if (declared.shape[d] != kDynamic && declared.shape[d] != shape[d])
      support::fail("{}: the shape operand's value {} contradicts the declared result {} in dimension {}",
                    spelling(kind), list(shape), to_string(declared), d);
    if (!declared.bounds.empty() && declared.bounds[d] != kDynamic && shape[d] > declared.bounds[d])
      support::fail("{}: size {} of dimension {} exceeds its bound {} in {}", spelling(kind), shape[d], d,
                    declared.bounds[d], to_string(declared));
  }
  Type t = declared.with_shape(shape);
  return t;
}

}  // namespace

bool is_dynamic_shape_op(OpKind kind) {
  switch (kind) {
    case OpKind::DynamicBroadcastInDim: case OpKind::DynamicConv: case OpKind::DynamicGather:
    case OpKind::DynamicIota: case OpKind::DynamicPad: case OpKind::DynamicReshape:
    case OpKind::RealDynamicSlice: return true;
    default: return false;
  }
}

std::vector<size_t> shape_operands(OpKind kind) {
  switch (kind) {
    case OpKind::DynamicBroadcastInDim: return {1};
    case OpKind::DynamicConv: return {2};
    case OpKind::DynamicGather: return {2};
    case OpKind::DynamicIota: return {0};
    case OpKind::DynamicPad: return {2, 3, 4};
    case OpKind::DynamicReshape: return {1};
    case OpKind::RealDynamicSlice: return {1, 2, 3};
    default: return {};
  }
}

std::optional<StaticForm> static_form(OpKind kind, const AttrMap& attrs, std::span<const Type> operand_types,
                                      const Type& declared, std::span<const Literal* const> values) {
  std::vector<size_t> shape_ops = shape_operands(kind);
  TESSERA_CHECK(!shape_ops.empty(), "static_form of {}", spelling(kind));
  for (size_t i : shape_ops)
    if (i >= values.size() || values[i] == nullptr) return std::nullopt;
  for (size_t i = 0; i < operand_types.size(); ++i)
    if (std::find(shape_ops.begin(), shape_ops.end(), i) == shape_ops.end() && !operand_types[i].is_static())
      return std::nullopt;
  auto ints = [&](size_t i) { return values_of(kind, i, *values[i]); };
  StaticForm f;
  f.attrs = attrs;
  bool declared_needed = false;  // the static rule reads its result type from `declared`
  switch (kind) {
    case OpKind::DynamicBroadcastInDim:
      f.kind = OpKind::BroadcastInDim;
      f.operands = {0};
      f.attrs.erase("known_expanding_dimensions");
      f.attrs.erase("known_nonexpanding_dimensions");
      f.attrs.erase("known_non_expanding_dimensions");
      f.result = shaped(kind, declared, ints(1));
      declared_needed = true;
      break;
    case OpKind::DynamicIota:
      f.kind = OpKind::Iota;
      f.operands = {};
      f.result = shaped(kind, declared, ints(0));
      declared_needed = true;
      break;
    case OpKind::DynamicReshape:
      f.kind = OpKind::Reshape;
      f.operands = {0};
      f.result = shaped(kind, declared, ints(1));
      declared_needed = true;
      break;
    case OpKind::RealDynamicSlice:
      f.kind = OpKind::Slice;
      f.operands = {0};
      f.attrs.set("start_indices", ints(1));
      f.attrs.set("limit_indices", ints(2));
      f.attrs.set("strides", ints(3));
      break;
    case OpKind::DynamicPad:
      f.kind = OpKind::Pad;
      f.operands = {0, 1};
      f.attrs.set("edge_padding_low", ints(2));
      f.attrs.set("edge_padding_high", ints(3));
      f.attrs.set("interior_padding", ints(4));
      break;
    case OpKind::DynamicGather:
      f.kind = OpKind::Gather;
      f.operands = {0, 1};
      f.attrs.set("slice_sizes", ints(2));
      break;
    case OpKind::DynamicConv: {
      f.kind = OpKind::Convolution;
      f.operands = {0, 1};
      const Literal& p = *values[2];
      if (!is_integer(p.element()) || p.type().rank() != 2)
        support::fail("{}: padding ({}) must be a 2-D integer tensor (C4)", spelling(kind), to_string(p.type()));
      Literal padding(Type(ElementType::i64, p.shape()));
      for (int64_t k = 0; k < p.num_elements(); ++k) padding.set_int(k, p.get_int(k));
      f.attrs.set("padding", std::move(padding));
      break;
    }
    default: TESSERA_CHECK(false, "static_form of {}", spelling(kind));
  }
  std::vector<Type> in;
  for (size_t i : f.operands) in.push_back(operand_types[i]);
  std::vector<Type> want;
  if (declared_needed) want.push_back(f.result);
  std::vector<Type> got;
  try {
    got = infer_result_types(ShapeQuery{f.kind, in, f.attrs, want});
  } catch (const support::UserError& e) {  // said as the dynamic op's failure
    support::fail("{} with its shape operands' values: {}", spelling(kind), e.what());
  }
  TESSERA_CHECK(got.size() == 1, "{} has one result", spelling(f.kind));
  if (!declared_needed) f.result = shaped(kind, declared, got[0].shape);
  if (f.result.element != got[0].element)
    support::fail("{}: result {} has another element type than {}", spelling(kind), to_string(declared),
                  to_string(got[0]));
  f.result.bounds.clear();
  return f;
}

}  // namespace tessera::ir

namespace tessera::ir {

void check_shape_assertion(const AttrMap& attrs, std::span<const Literal* const> values) {
  if (values.empty() || values[0]->type().rank() != 0 || values[0]->element() != ElementType::i1)
    support::fail("stablehlo.custom_call @shape_assertion: its first operand must be a boolean scalar (the predicate)");
  if (values[0]->get_int(0) != 0) return;
  std::string message = attrs.get_or<std::string>("error_message", "shape assertion failed");
  std::string out;
  for (size_t i = 0; i < message.size(); ++i) {
    size_t close = message.find('}', i);
    if (message[i] == '{' && close != std::string::npos && close > i + 1 &&
        message.find_first_not_of("0123456789", i + 1) == close) {
      size_t k = std::stoul(message.substr(i + 1, close - i - 1)) + 1;
      if (k < values.size() && values[k]->num_elements() == 1) {
        out += std::to_string(values[k]->get_int(0));
        i = close;
        continue;
      }
    }
    out += message[i];
  }
  support::fail("shape assertion failed: {}", out);
}

}  // namespace tessera::ir
