// Every shape-rule failure, with the exact message a user sees. One row per reject() in
// src/ir/shape_*.cpp, plus a success row per family so the rules are not merely rejecting.
#include <gtest/gtest.h>

#include <limits>

#include "ir/shape_rules.h"
#include "support/error.h"

namespace tessera::ir {
namespace {

using Ints = std::vector<int64_t>;

AttrMap attrs(std::initializer_list<std::pair<std::string, Attribute>> list) {
  AttrMap a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

struct Case {
  std::string name;
  OpKind kind;
  std::vector<Type> operands;
  AttrMap attrs;
  std::vector<Type> declared;
  std::string message;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string error_of(const Case& c) {
  try {
    infer_result_types(ShapeQuery{c.kind, c.operands, c.attrs, c.declared});
  } catch (const support::UserError& e) {
    return e.what();
  }
  return "<no error>";
}

Type ty(ElementType e, Ints s) { return Type(e, std::move(s)); }
constexpr auto F32 = ElementType::f32;
constexpr auto I32 = ElementType::i32;
constexpr auto I1 = ElementType::i1;
constexpr auto C64 = ElementType::c64;

GatherDims gather_dims(Ints offset, Ints collapsed, Ints start_map, int64_t ivd) {
  GatherDims g;
  g.offset_dims = std::move(offset);
  g.collapsed_slice_dims = std::move(collapsed);
  g.start_index_map = std::move(start_map);
  g.index_vector_dim = ivd;
  return g;
}

// gather_dims with operand and start_indices batching dimensions.
GatherDims batched_gather_dims(Ints offset, Ints collapsed, Ints start_map, int64_t ivd, Ints operand_batching,
                               Ints indices_batching) {
  GatherDims g = gather_dims(std::move(offset), std::move(collapsed), std::move(start_map), ivd);
  g.operand_batching_dims = std::move(operand_batching);
  g.start_indices_batching_dims = std::move(indices_batching);
  return g;
}

ScatterDims scatter_dims(Ints window, Ints inserted, Ints to_operand, int64_t ivd) {
  ScatterDims s;
  s.update_window_dims = std::move(window);
  s.inserted_window_dims = std::move(inserted);
  s.scatter_dims_to_operand_dims = std::move(to_operand);
  s.index_vector_dim = ivd;
  return s;
}

DotDims dot_dims(Ints lb, Ints rb, Ints lc, Ints rc) { return DotDims{lb, rb, lc, rc}; }

Sharding rows() { return Sharding{"m", {{"x"}, {}}, {}, {}}; }

const std::vector<Case>& cases() {
  static const std::vector<Case> k = {
      // Dispatch and leaves.
      {"arity", OpKind::Add, {f32({2})}, {}, {}, "stablehlo.add: expects 2 operands, got 1"},
      {"constant_value", OpKind::Constant, {}, {}, {}, "stablehlo.constant: has no 'value' attribute"},
      {"iota_declared", OpKind::Iota, {}, attrs({{"iota_dimension", int64_t{0}}}), {},
       "stablehlo.iota: needs its result type written out"},
      {"iota_dim", OpKind::Iota, {}, attrs({{"iota_dimension", int64_t{2}}}), {f32({2, 3})},
       "stablehlo.iota: iota_dimension = 2 is out of range for rank 2"},
      // Elementwise.
      {"float_only", OpKind::Tanh, {i32({4})}, {}, {},
       "stablehlo.tanh: operand 0 has type tensor<4xi32>, must be float or complex"},
      {"numeric", OpKind::Negate, {i1({4})}, {}, {},
       "stablehlo.negate: operand 0 has type tensor<4xi1>, must be integer, float or complex"},
      {"round_float", OpKind::Floor, {ty(C64, {2})}, {}, {},
       "stablehlo.floor: operand 0 has type tensor<2xcomplex<f32>>, must be float"},
      {"not_float", OpKind::Not, {f32({2})}, {}, {},
       "stablehlo.not: operand 0 has type tensor<2xf32>, must be boolean or integer"},
      {"shift_int", OpKind::ShiftLeft, {i1({2}), i1({2})}, {}, {},
       "stablehlo.shift_left: operand 0 has type tensor<2xi1>, must be integer"},
      {"binary_types", OpKind::Add, {f32({4}), f32({3})}, {}, {},
       "stablehlo.add: operand 1 has type tensor<3xf32>, but operand 0 has type tensor<4xf32>"},
      {"binary_elements", OpKind::Multiply, {f32({4}), i32({4})}, {}, {},
       "stablehlo.multiply: operand 1 has type tensor<4xi32>, but operand 0 has type tensor<4xf32>"},
      {"convert_shape", OpKind::Convert, {f32({4})}, {}, {i32({3})},
       "stablehlo.convert: result tensor<3xi32> must have the shape of operand tensor<4xf32>"},
      {"bitcast_ratio", OpKind::BitcastConvert, {ty(ElementType::i64, {2})}, {}, {f32({2, 3})},
       "stablehlo.bitcast_convert: result tensor<2x3xf32> does not match operand tensor<2xi64> "
       "(expected shape [2, 2])"},
      {"bitcast_narrow", OpKind::BitcastConvert, {f32({2, 3})}, {}, {ty(ElementType::i64, {2})},
       "stablehlo.bitcast_convert: operand tensor<2x3xf32> needs a last dimension of 2 to bitcast "
       "to tensor<2xi64>"},
      {"compare_direction", OpKind::Compare, {f32({2}), f32({2})}, {}, {},
       "stablehlo.compare: has no comparison_direction (EQ, NE, GE, GT, LE or LT)"},
      // A direction written as a string (the generic form's `comparison_direction = "FOOBAR"`) is
      // no direction; it reached the kernel as an attribute of another type.
      {"compare_direction_string", OpKind::Compare, {f32({2}), f32({2})},
       attrs({{"comparison_direction", std::string("FOOBAR")}}), {},
       "stablehlo.compare: has no comparison_direction (EQ, NE, GE, GT, LE or LT)"},
      {"abs_unsigned", OpKind::Abs, {ty(ElementType::ui8, {2})}, {}, {},
       "stablehlo.abs: operand 0 has type tensor<2xui8>, must be signed integer, float or complex"},
      {"sign_unsigned", OpKind::Sign, {ty(ElementType::ui32, {2})}, {}, {},
       "stablehlo.sign: operand 0 has type tensor<2xui32>, must be signed integer, float or complex"},
      {"clamp_bound", OpKind::Clamp, {f32({3}), f32({2}), f32({})}, {}, {},
       "stablehlo.clamp: bound min has type tensor<3xf32>; it must be a scalar or have the type of "
       "operand tensor<2xf32>"},
      {"clamp_type", OpKind::Clamp, {ty(C64, {}), ty(C64, {2}), ty(C64, {})}, {}, {},
       "stablehlo.clamp: operand 1 has type tensor<2xcomplex<f32>>, must be boolean, integer or "
       "float"},
      {"select_branches", OpKind::Select, {i1({2}), f32({2}), i32({2})}, {}, {},
       "stablehlo.select: branches have types tensor<2xf32> and tensor<2xi32>"},
      {"select_pred", OpKind::Select, {i1({3}), f32({2}), f32({2})}, {}, {},
       "stablehlo.select: predicate tensor<3xi1> must be i1, a scalar or shaped like tensor<2xf32>"},
      // Data movement.
      {"broadcast_attr", OpKind::BroadcastInDim, {f32({2})}, {}, {f32({3, 2})},
       "stablehlo.broadcast_in_dim: has no 'broadcast_dimensions' attribute"},
      {"broadcast_len", OpKind::BroadcastInDim, {f32({2})}, attrs({{"broadcast_dimensions", Ints{0, 1}}}),
       {f32({3, 2})}, "stablehlo.broadcast_in_dim: broadcast_dimensions has 2 entries for operand rank 1"},
      {"broadcast_range", OpKind::BroadcastInDim, {f32({2})}, attrs({{"broadcast_dimensions", Ints{2}}}),
       {f32({3, 2})}, "stablehlo.broadcast_in_dim: broadcast_dimensions = 2 is out of range for rank 2"},
      {"broadcast_repeat", OpKind::BroadcastInDim, {f32({1, 1})},
       attrs({{"broadcast_dimensions", Ints{1, 1}}}), {f32({3, 2})},
       "stablehlo.broadcast_in_dim: broadcast_dimensions repeats dimension 1"},
      {"broadcast_element", OpKind::BroadcastInDim, {f32({2})}, attrs({{"broadcast_dimensions", Ints{1}}}),
       {i32({3, 2})},
       "stablehlo.broadcast_in_dim: result tensor<3x2xi32> has another element type than operand "
       "tensor<2xf32>"},
      {"broadcast_size", OpKind::BroadcastInDim, {f32({2})}, attrs({{"broadcast_dimensions", Ints{0}}}),
       {f32({3, 2})},
       "stablehlo.broadcast_in_dim: operand dimension 0 (size 2) cannot broadcast to result "
       "dimension 0 (size 3)"},
      {"reshape_count", OpKind::Reshape, {f32({2, 3})}, {}, {f32({5})},
       "stablehlo.reshape: cannot reshape tensor<2x3xf32> (6 elements) to tensor<5xf32> (5 elements)"},
      {"transpose_perm", OpKind::Transpose, {f32({2, 3})}, attrs({{"permutation", Ints{0, 0}}}), {},
       "stablehlo.transpose: permutation repeats dimension 0"},
      {"slice_fit", OpKind::Slice, {f32({4})},
       attrs({{"start_indices", Ints{1}}, {"limit_indices", Ints{5}}, {"strides", Ints{1}}}), {},
       "stablehlo.slice: dimension 0: slice [1:5:1] does not fit size 4"},
      {"slice_len", OpKind::Slice, {f32({4})},
       attrs({{"start_indices", Ints{1, 0}}, {"limit_indices", Ints{2}}, {"strides", Ints{1}}}), {},
       "stablehlo.slice: start_indices has 2 entries for operand rank 1"},
      {"dynamic_slice_empty", OpKind::DynamicSlice, {}, {}, {},
       "stablehlo.dynamic_slice: expects an operand"},
      {"dynamic_slice_count", OpKind::DynamicSlice, {f32({4, 4}), i32({})},
       attrs({{"slice_sizes", Ints{2, 2}}}), {},
       "stablehlo.dynamic_slice: expects 2 index operands for operand rank 2, got 1"},
      {"dynamic_slice_index", OpKind::DynamicSlice, {f32({4}), f32({})},
       attrs({{"slice_sizes", Ints{2}}}), {},
       "stablehlo.dynamic_slice: index operand 1 has type tensor<f32>, must be an integer scalar"},
      {"dynamic_slice_index_types", OpKind::DynamicSlice, {f32({4, 4}), i32({}), Type(ElementType::i64, {})},
       attrs({{"slice_sizes", Ints{2, 2}}}), {},
       "stablehlo.dynamic_slice: index operand 2 has type tensor<i64>, but index operand 1 has tensor<i32>: the "
       "start indices have one type"},
      {"dynamic_slice_size", OpKind::DynamicSlice, {f32({4}), i32({})},
       attrs({{"slice_sizes", Ints{5}}}), {},
       "stablehlo.dynamic_slice: slice_sizes[0] = 5 does not fit dimension size 4"},
      {"dus_operands", OpKind::DynamicUpdateSlice, {f32({4})}, {}, {},
       "stablehlo.dynamic_update_slice: expects an operand and an update"},
      {"dus_update", OpKind::DynamicUpdateSlice, {f32({4}), i32({2}), i32({})}, {}, {},
       "stablehlo.dynamic_update_slice: update tensor<2xi32> does not match operand tensor<4xf32>"},
      {"dus_size", OpKind::DynamicUpdateSlice, {f32({4}), f32({5}), i32({})}, {}, {},
       "stablehlo.dynamic_update_slice: update dimension 0 (size 5) is larger than the operand's (4)"},
      {"concat_empty", OpKind::Concatenate, {}, {}, {},
       "stablehlo.concatenate: expects at least one operand"},
      {"concat_dim", OpKind::Concatenate, {f32({2})}, attrs({{"dimension", int64_t{1}}}), {},
       "stablehlo.concatenate: dimension = 1 is out of range for rank 1"},
      {"concat_shape", OpKind::Concatenate, {f32({2, 3}), f32({2, 4})},
       attrs({{"dimension", int64_t{0}}}), {},
       "stablehlo.concatenate: operand 1 has type tensor<2x4xf32>, which does not concatenate with "
       "tensor<2x3xf32> along dimension 0"},
      {"pad_value", OpKind::Pad, {f32({2}), f32({1})}, {}, {},
       "stablehlo.pad: padding value tensor<1xf32> must be a scalar of tensor<2xf32>'s element type"},
      {"pad_interior", OpKind::Pad, {f32({2}), f32({})},
       attrs({{"edge_padding_low", Ints{0}}, {"edge_padding_high", Ints{0}}, {"interior_padding", Ints{-1}}}),
       {}, "stablehlo.pad: interior_padding[0] = -1 is negative"},
      {"pad_negative", OpKind::Pad, {f32({2}), f32({})},
       attrs({{"edge_padding_low", Ints{-2}}, {"edge_padding_high", Ints{-1}}, {"interior_padding", Ints{0}}}),
       {}, "stablehlo.pad: dimension 0 would have negative size -1"},
      {"reverse_dims", OpKind::Reverse, {f32({2})}, attrs({{"dimensions", Ints{1}}}), {},
       "stablehlo.reverse: dimensions = 1 is out of range for rank 1"},
      {"gather_dn", OpKind::Gather, {f32({4}), i32({2, 1})}, attrs({{"slice_sizes", Ints{1}}}), {},
       "stablehlo.gather: has no dimension_numbers"},
      {"gather_indices", OpKind::Gather, {f32({4}), f32({2, 1})},
       attrs({{"dimension_numbers", gather_dims({}, {0}, {0}, 1)}, {"slice_sizes", Ints{1}}}), {},
       "stablehlo.gather: start_indices tensor<2x1xf32> must be integers"},
      {"gather_ivd", OpKind::Gather, {f32({4}), i32({2, 1})},
       attrs({{"dimension_numbers", gather_dims({}, {0}, {0}, 3)}, {"slice_sizes", Ints{1}}}), {},
       "stablehlo.gather: index_vector_dim = 3 is out of range for start_indices tensor<2x1xi32>"},
      {"gather_map", OpKind::Gather, {f32({4}), i32({2, 2})},
       attrs({{"dimension_numbers", gather_dims({}, {0}, {0}, 1)}, {"slice_sizes", Ints{1}}}), {},
       "stablehlo.gather: start_index_map has 1 entries, but index vectors have 2"},
      {"gather_slice", OpKind::Gather, {f32({4}), i32({2, 1})},
       attrs({{"dimension_numbers", gather_dims({}, {0}, {0}, 1)}, {"slice_sizes", Ints{5}}}), {},
       "stablehlo.gather: slice_sizes[0] = 5 does not fit dimension size 4"},
      {"gather_collapsed", OpKind::Gather, {f32({4}), i32({2, 1})},
       attrs({{"dimension_numbers", gather_dims({}, {0}, {0}, 1)}, {"slice_sizes", Ints{2}}}), {},
       "stablehlo.gather: collapsed or batching dimension 0 has slice size 2, must be 0 or 1"},
      {"gather_batching_pair", OpKind::Gather, {f32({3, 4}), i32({2, 1})},
       attrs({{"dimension_numbers", batched_gather_dims({}, {1}, {1}, 1, {0}, {0})}, {"slice_sizes", Ints{1, 1}}}),
       {}, "stablehlo.gather: operand dimension 0 has size 3, but start_indices dimension 0 (its batching pair) has 2"},
      {"gather_batching_ivd", OpKind::Gather, {f32({2, 4}), i32({2, 1})},
       attrs({{"dimension_numbers", batched_gather_dims({}, {1}, {1}, 1, {0}, {1})}, {"slice_sizes", Ints{1, 1}}}),
       {}, "stablehlo.gather: start_indices_batching_dims holds index_vector_dim 1"},
      {"gather_unsorted", OpKind::Gather, {f32({4, 3, 2}), i32({2, 2})},
       attrs({{"dimension_numbers", gather_dims({1}, {2, 0}, {0, 2}, 1)}, {"slice_sizes", Ints{1, 3, 1}}}), {},
       "stablehlo.gather: collapsed_slice_dims [2, 0] must be sorted"},
      {"gather_offset", OpKind::Gather, {f32({4, 3}), i32({2, 1})},
       attrs({{"dimension_numbers", gather_dims({}, {0}, {0}, 1)}, {"slice_sizes", Ints{1, 3}}}), {},
       "stablehlo.gather: offset_dims has 0 entries for 1 uncollapsed slice dimensions"},
      {"scatter_count", OpKind::Scatter, {f32({4}), i32({1})}, {}, {},
       "stablehlo.scatter: expects N inputs, the indices and N updates; got 2 operands"},
      {"scatter_dn", OpKind::Scatter, {f32({4}), i32({1, 1}), f32({1})}, {}, {},
       "stablehlo.scatter: has no scatter_dimension_numbers"},
      {"scatter_indices", OpKind::Scatter, {f32({4}), f32({1, 1}), f32({1})},
       attrs({{"scatter_dimension_numbers", scatter_dims({}, {0}, {0}, 1)}}), {},
       "stablehlo.scatter: scatter_indices tensor<1x1xf32> must be integers"},
      {"scatter_inputs", OpKind::Scatter, {f32({4}), f32({3}), i32({1, 1}), f32({1}), f32({1})},
       attrs({{"scatter_dimension_numbers", scatter_dims({}, {0}, {0}, 1)}}), {},
       "stablehlo.scatter: inputs 1 and 0 differ in shape"},
      {"scatter_update_type", OpKind::Scatter, {f32({4}), i32({1, 1}), i32({1})},
       attrs({{"scatter_dimension_numbers", scatter_dims({}, {0}, {0}, 1)}}), {},
       "stablehlo.scatter: update 0 has type tensor<1xi32>, input has tensor<4xf32>"},
      {"scatter_update_rank", OpKind::Scatter, {f32({4}), i32({1, 1}), f32({1, 1})},
       attrs({{"scatter_dimension_numbers", scatter_dims({}, {0}, {0}, 1)}}), {},
       "stablehlo.scatter: update 0 has rank 2, expected 1 scatter plus 0 window dimensions"},
      {"scatter_update_size", OpKind::Scatter, {f32({4}), i32({2, 1}), f32({3})},
       attrs({{"scatter_dimension_numbers", scatter_dims({}, {0}, {0}, 1)}}), {},
       "stablehlo.scatter: update 0 tensor<3xf32> has size 3 in dimension 0, where scatter_indices give 2"},
      {"scatter_window_size", OpKind::Scatter, {f32({4, 3}), i32({2, 1}), f32({2, 4})},
       attrs({{"scatter_dimension_numbers", scatter_dims({1}, {0}, {0}, 1)}}), {},
       "stablehlo.scatter: update 0 tensor<2x4xf32> has size 4 in dimension 1, where the input's window allows at most 3"},
      {"scatter_input_rank", OpKind::Scatter, {f32({4, 3}), i32({2, 1}), f32({2})},
       attrs({{"scatter_dimension_numbers", scatter_dims({}, {0}, {0}, 1)}}), {},
       "stablehlo.scatter: input tensor<4x3xf32> has rank 2, but update_window_dims, inserted_window_dims and "
       "input_batching_dims name 1"},
      // The fuzzer's finding (fuzz/regressions/program/scatter_index_vector_dim_in_batching.mlir): index
      // vectors along dimension 0 of [4, 1] indices are 4 long, for one mapped dimension.
      {"scatter_index_map", OpKind::Scatter, {i32({4, 1000}), i32({4, 1}), i32({4})},
       attrs({{"scatter_dimension_numbers", [] {
                 ScatterDims d = scatter_dims({}, {1}, {1}, 0);
                 d.input_batching_dims = {0};
                 d.scatter_indices_batching_dims = {0};
                 return d;
               }()}}),
       {}, "stablehlo.scatter: scatter_dims_to_operand_dims has 1 entries, but index vectors have 4"},
      // Reductions, contractions.
      {"reduce_count", OpKind::Reduce, {f32({4})}, attrs({{"dimensions", Ints{0}}}), {},
       "stablehlo.reduce: expects N inputs and N init values; got 1 operands"},
      {"reduce_dims_attr", OpKind::Reduce, {f32({4}), f32({})}, {}, {},
       "stablehlo.reduce: has no 'dimensions' attribute"},
      {"reduce_dim", OpKind::Reduce, {f32({4}), f32({})}, attrs({{"dimensions", Ints{1}}}), {},
       "stablehlo.reduce: dimensions = 1 is out of range for rank 1"},
      {"reduce_repeat", OpKind::Reduce, {f32({4}), f32({})}, attrs({{"dimensions", Ints{0, 0}}}), {},
       "stablehlo.reduce: dimensions repeats 0"},
      {"reduce_shapes", OpKind::Reduce, {f32({4}), f32({3}), f32({}), f32({})},
       attrs({{"dimensions", Ints{0}}}), {},
       "stablehlo.reduce: input 1 has shape tensor<3xf32>, input 0 has tensor<4xf32>"},
      {"reduce_init", OpKind::Reduce, {f32({4}), i32({})}, attrs({{"dimensions", Ints{0}}}), {},
       "stablehlo.reduce: init value 0 has type tensor<i32>, must be a scalar of f32 (input 0's "
       "element type)"},
      {"dot_dn", OpKind::DotGeneral, {f32({2, 3}), f32({3, 4})}, {}, {},
       "stablehlo.dot_general: has no dot_dimension_numbers"},
      {"dot_counts", OpKind::DotGeneral, {f32({2, 3}), f32({3, 4})},
       attrs({{"dot_dimension_numbers", dot_dims({}, {}, {1}, {})}}), {},
       "stablehlo.dot_general: lhs and rhs list different numbers of batch or contracting dimensions"},
      {"dot_range", OpKind::DotGeneral, {f32({2, 3}), f32({3, 4})},
       attrs({{"dot_dimension_numbers", dot_dims({}, {}, {2}, {0})}}), {},
       "stablehlo.dot_general: lhs contracting dimension = 2 is out of range for rank 2"},
      {"dot_size", OpKind::DotGeneral, {f32({8, 4}), f32({3, 4})},
       attrs({{"dot_dimension_numbers", dot_dims({}, {}, {1}, {0})}}), {},
       "stablehlo.dot_general: contracting dimension 1 of lhs tensor<8x4xf32> has size 4, but "
       "dimension 0 of rhs tensor<3x4xf32> has size 3"},
      {"dot_elements", OpKind::DotGeneral, {f32({2, 3}), i32({3, 4})},
       attrs({{"dot_dimension_numbers", dot_dims({}, {}, {1}, {0})}}), {},
       "stablehlo.dot_general: operands have element types f32 and i32 (C13)"},
      // A dimension contracted twice (or batched and contracted) read past the operand.
      {"dot_repeated_contracting", OpKind::DotGeneral, {f32({2, 2}), f32({2, 2})},
       attrs({{"dot_dimension_numbers", dot_dims({}, {}, {0, 0}, {1, 1})}}), {},
       "stablehlo.dot_general: lhs dimension 0 is listed twice among the batch and contracting dimensions (C3)"},
      {"dot_batch_and_contracting", OpKind::DotGeneral, {f32({2, 2}), f32({2, 2})},
       attrs({{"dot_dimension_numbers", dot_dims({0}, {1}, {1}, {1})}}), {},
       "stablehlo.dot_general: rhs dimension 1 is listed twice among the batch and contracting dimensions (C4)"},
      {"dot_precision_count", OpKind::DotGeneral, {f32({2, 3}), f32({3, 4})},
       attrs({{"dot_dimension_numbers", dot_dims({}, {}, {1}, {0})},
              {"precision_config", Opaque{"[#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>, "
                                          "#stablehlo<precision DEFAULT>]"}}}),
       {}, "stablehlo.dot_general: precision_config has 3 entries; it has at most 2, one per operand"},
      {"dot_precision_value", OpKind::DotGeneral, {f32({2, 3}), f32({3, 4})},
       attrs({{"dot_dimension_numbers", dot_dims({}, {}, {1}, {0})},
              {"precision_config", Opaque{"[#stablehlo<precision FOO>]"}}}),
       {}, "stablehlo.dot_general: precision_config entry 0 is 'FOO'; it must be DEFAULT, HIGH or HIGHEST"},
      {"gather_empty_groups", OpKind::AllGather, {f32({8, 2})},
       attrs({{"all_gather_dim", int64_t{1}}, {"replica_groups", IntMatrix{0, 2, {}}}}), {f32({8, 8})},
       "stablehlo.all_gather: replica_groups has groups of 2 and no group"},
      // Collectives and Shardy.
      {"gather_dim_attr", OpKind::AllGather, {f32({2})}, {}, {},
       "stablehlo.all_gather: has no 'all_gather_dim' attribute"},
      {"gather_no_groups", OpKind::AllGather, {f32({2})}, attrs({{"all_gather_dim", int64_t{0}}}), {},
       "stablehlo.all_gather: needs its result type written out"},
      {"scatter_divides", OpKind::ReduceScatter, {f32({6})},
       attrs({{"scatter_dimension", int64_t{0}}, {"replica_groups", IntMatrix{1, 4, {0, 1, 2, 3}}}}), {},
       "stablehlo.reduce_scatter: scatter dimension 0 of tensor<6xf32> does not divide by the group "
       "size 4"},
      {"all_to_all_count", OpKind::AllToAll, {f32({4})},
       attrs({{"split_dimension", int64_t{0}}, {"concat_dimension", int64_t{0}}}), {},
       "stablehlo.all_to_all: needs a positive split_count"},
      {"all_to_all_divides", OpKind::AllToAll, {f32({6, 2})},
       attrs({{"split_dimension", int64_t{0}}, {"concat_dimension", int64_t{1}}, {"split_count", int64_t{4}}}),
       {}, "stablehlo.all_to_all: split dimension 0 of tensor<6x2xf32> does not divide by split_count 4"},
      {"permute_pairs", OpKind::CollectivePermute, {f32({2})},
       attrs({{"source_target_pairs", IntMatrix{1, 3, {0, 1, 2}}}}), {},
       "stablehlo.collective_permute: needs source_target_pairs of shape Nx2"},
      {"gather_declared", OpKind::AllGather, {f32({2, 3})},
       attrs({{"all_gather_dim", int64_t{1}}}), {f32({2, 4})},
       "stablehlo.all_gather: result tensor<2x4xf32> is not operand tensor<2x3xf32> gathered from "
       "a group along dimension 1"},
      {"scatter_declared", OpKind::ReduceScatter, {f32({2, 6})},
       attrs({{"scatter_dimension", int64_t{1}}}), {f32({3, 2})},
       "stablehlo.reduce_scatter: result tensor<3x2xf32> is not operand tensor<2x6xf32> scattered "
       "over a group along dimension 1"},
      {"broadcast_empty", OpKind::CollectiveBroadcast, {}, {}, {},
       "stablehlo.collective_broadcast: expects at least one operand"},
      {"broadcast_roots", OpKind::CollectiveBroadcast, {f32({2}), f32({1})},
       attrs({{"has_dynamic_root", true}}), {},
       "stablehlo.collective_broadcast: has_dynamic_root needs a last operand of 1 integer roots, "
       "got tensor<1xf32>"},
      // Calls and the harness.
      {"call_callee", OpKind::Call, {f32({2})}, {}, {}, "func.call: has no callee"},
      {"custom_call_target", OpKind::CustomCall, {}, {}, {},
       "stablehlo.custom_call: has no call_target_name"},
      {"run_parallel_programs", OpKind::RunParallel, {}, {}, {},
       "interpreter.run_parallel: has no programs"},
      {"run_parallel_rows", OpKind::RunParallel, {},
       attrs({{"programs", SymbolGrid{{{"f", "g"}, {"f"}}}}}), {},
       "interpreter.run_parallel: programs rows have 2 and 1 entries"},
      {"expect_const_value", OpKind::ExpectEqConst, {f32({2})}, {}, {},
       "check.expect_eq_const: has no expected value"},
      {"expect_const_type", OpKind::ExpectAlmostEqConst, {f32({2})},
       attrs({{"value", Literal(f32({3}))}}), {},
       "check.expect_almost_eq_const: compares tensor<2xf32> with a constant of tensor<3xf32>"},
      {"expect_types", OpKind::ExpectClose, {f32({2}), f64({2})}, {}, {},
       "check.expect_close: compares tensor<2xf32> with tensor<2xf64>"},
      {"constraint_sharding", OpKind::ShardingConstraint, {f32({2})}, {}, {},
       "sdy.sharding_constraint: has no sharding"},
      {"reshard_sharding", OpKind::Reshard, {f32({2})}, {}, {}, "sdy.reshard: has no sharding"},
      // Shardy's explicit collectives: ranks of out_sharding and of the per-dimension axes.
      {"sdy_all_gather_out", OpKind::SdyAllGather, {f32({2, 2})},
       attrs({{"gathering_axes", rows()}}), {}, "sdy.all_gather: has no 'out_sharding' attribute"},
      {"sdy_all_gather_axes", OpKind::SdyAllGather, {f32({2, 2})},
       attrs({{"out_sharding", rows()}}), {}, "sdy.all_gather: has no 'gathering_axes' attribute"},
      {"sdy_all_slice_rank", OpKind::SdyAllSlice, {f32({2, 2})},
       attrs({{"out_sharding", rows()}, {"slicing_axes", Sharding{"m", {{"x"}}, {}, {}}}}), {},
       "sdy.all_slice: slicing_axes has 1 entries for tensor<2x2xf32>"},
      {"sdy_reduce_scatter_out_rank", OpKind::SdyReduceScatter, {f32({2})},
       attrs({{"out_sharding", rows()}, {"reduction_axes", rows()}}), {},
       "sdy.reduce_scatter: out_sharding has 2 dimensions for tensor<2xf32>"},
      {"sdy_all_reduce_one_list", OpKind::SdyAllReduce, {f32({2, 2})},
       attrs({{"out_sharding", rows()}, {"reduction_axes", rows()}}), {},
       "sdy.all_reduce: reduction_axes must be one list of axes"},
      {"sdy_all_to_all_dims", OpKind::SdyAllToAll, {f32({2, 2})},
       attrs({{"out_sharding", rows()}, {"params", Sharding{"m", {{"x"}}, {}, {}}},
              {"param_dims", IntMatrix{1, 2, {0, 2}}}}), {},
       "sdy.all_to_all: param_dims = 2 is out of range for rank 2"},
      {"sdy_all_to_all_same_dim", OpKind::SdyAllToAll, {f32({2, 2})},
       attrs({{"out_sharding", rows()}, {"params", Sharding{"m", {{"x"}}, {}, {}}},
              {"param_dims", IntMatrix{1, 2, {1, 1}}}}), {},
       "sdy.all_to_all: a parameter moves axes from dimension 1 to itself"},
      {"sdy_all_to_all_count", OpKind::SdyAllToAll, {f32({2, 2})},
       attrs({{"out_sharding", rows()}, {"params", rows()}, {"param_dims", IntMatrix{1, 2, {0, 1}}}}), {},
       "sdy.all_to_all: has 2 parameter axis lists and 1 parameter dimension pairs"},
      {"sdy_collective_permute_out", OpKind::SdyCollectivePermute, {f32({2, 2})}, {}, {},
       "sdy.collective_permute: has no 'out_sharding' attribute"},
      {"sdy_collective_permute_arity", OpKind::SdyCollectivePermute, {f32({2}), f32({2})}, {}, {},
       "sdy.collective_permute: expects 1 operands, got 2"},
      {"sdy_constant_value", OpKind::SdyConstant, {}, {}, {}, "sdy.constant: has no 'value' attribute"},
      {"manual_shardings", OpKind::ManualComputation, {f32({2})}, {}, {f32({2})},
       "sdy.manual_computation: needs in_shardings and out_shardings"},
      {"manual_in", OpKind::ManualComputation, {f32({2})},
       attrs({{"in_shardings", ShardingList{}}, {"out_shardings", ShardingList{rows()}}}), {f32({2})},
       "sdy.manual_computation: has 0 in_shardings for 1 operands"},
      {"manual_out", OpKind::ManualComputation, {f32({2})},
       attrs({{"in_shardings", ShardingList{rows()}}, {"out_shardings", ShardingList{}}}), {f32({2})},
       "sdy.manual_computation: has 0 out_shardings for 1 results"},
      // More elementwise ops (#17), with the spec's constraint numbers.
      {"tan_float", OpKind::Tan, {i32({2})}, {}, {},
       "stablehlo.tan: operand 0 has type tensor<2xi32>, must be float or complex"},
      {"popcnt_int", OpKind::Popcnt, {f32({2})}, {}, {},
       "stablehlo.popcnt: operand 0 has type tensor<2xf32>, must be integer"},
      {"clz_int", OpKind::CountLeadingZeros, {i1({2})}, {}, {},
       "stablehlo.count_leading_zeros: operand 0 has type tensor<2xi1>, must be integer"},
      {"reduce_precision_attrs", OpKind::ReducePrecision, {f32({2})}, attrs({{"exponent_bits", int64_t{5}}}), {},
       "stablehlo.reduce_precision: needs both exponent_bits and mantissa_bits"},
      {"reduce_precision_c2", OpKind::ReducePrecision, {f32({2})},
       attrs({{"exponent_bits", int64_t{0}}, {"mantissa_bits", int64_t{3}}}), {},
       "stablehlo.reduce_precision: (C2) exponent_bits = 0 must be at least 1"},
      {"reduce_precision_c3", OpKind::ReducePrecision, {f32({2})},
       attrs({{"exponent_bits", int64_t{5}}, {"mantissa_bits", int64_t{-1}}}), {},
       "stablehlo.reduce_precision: (C3) mantissa_bits = -1 must not be negative"},
      {"reduce_precision_float", OpKind::ReducePrecision, {i32({2})},
       attrs({{"exponent_bits", int64_t{5}}, {"mantissa_bits", int64_t{2}}}), {},
       "stablehlo.reduce_precision: operand 0 has type tensor<2xi32>, must be float"},
      {"complex_c1_types", OpKind::Complex, {f32({2}), f32({3})}, {}, {},
       "stablehlo.complex: (C1) rhs has type tensor<3xf32>, but lhs has type tensor<2xf32>"},
      {"complex_c1_element", OpKind::Complex, {ty(ElementType::f16, {2}), ty(ElementType::f16, {2})}, {}, {},
       "stablehlo.complex: (C1) operands have type tensor<2xf16>, must be of f32 or f64"},
      {"real_operand", OpKind::Real, {i32({2})}, {}, {},
       "stablehlo.real: operand 0 has type tensor<2xi32>, must be float or complex"},
      {"erf_real", OpKind::Erf, {ty(C64, {2})}, {}, {},
       "chlo.erf: operand 0 has type tensor<2xcomplex<f32>>, must be float"},
      {"is_inf_float", OpKind::IsInf, {i32({2})}, {}, {},
       "chlo.is_inf: operand 0 has type tensor<2xi32>, must be float"},
      {"next_after_types", OpKind::NextAfter, {f32({2}), ty(ElementType::f64, {2})}, {}, {},
       "chlo.next_after: operand 1 has type tensor<2xf64>, but operand 0 has type tensor<2xf32>"},
  };
  return k;
}

class ShapeRuleFailure : public ::testing::TestWithParam<Case> {};

TEST_P(ShapeRuleFailure, MessageNamesOpAndMismatch) {
  EXPECT_EQ(error_of(GetParam()), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(All, ShapeRuleFailure, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

std::vector<Type> infer(OpKind k, std::vector<Type> ops, AttrMap a = {}, std::vector<Type> d = {}) {
  return infer_result_types(ShapeQuery{k, ops, a, d});
}

TEST(ShapeRules, ResultsOfTheMoreElementwiseOps) {
  EXPECT_EQ(infer(OpKind::Complex, {f32({3}), f32({3})}), std::vector{Type(C64, {3})});
  EXPECT_EQ(infer(OpKind::Complex, {Type(ElementType::f64, {3}), Type(ElementType::f64, {3})}),
            std::vector{Type(ElementType::c128, {3})});
  EXPECT_EQ(infer(OpKind::Real, {Type(C64, {3})}), std::vector{f32({3})});
  EXPECT_EQ(infer(OpKind::Imag, {f32({3})}), std::vector{f32({3})});
  EXPECT_EQ(infer(OpKind::IsNegInf, {f32({3})}), std::vector{i1({3})});
  EXPECT_EQ(infer(OpKind::Popcnt, {i32({3})}), std::vector{i32({3})});
  EXPECT_EQ(infer(OpKind::Sinh, {Type(C64, {3})}), std::vector{Type(C64, {3})});
  EXPECT_EQ(infer(OpKind::ReducePrecision, {f32({3})},
                  attrs({{"exponent_bits", int64_t{5}}, {"mantissa_bits", int64_t{0}}})),
            std::vector{f32({3})});
}

TEST(ShapeRules, ResultsOfWellFormedOps) {
  EXPECT_EQ(infer(OpKind::Add, {f32({2}), f32({2})}), std::vector{f32({2})});
  EXPECT_EQ(infer(OpKind::Abs, {Type(C64, {3})}), std::vector{f32({3})});
  EXPECT_EQ(infer(OpKind::IsFinite, {f32({3})}), std::vector{i1({3})});
  // Complex to real keeps the real part (StableHLO's convert).
  EXPECT_EQ(infer(OpKind::Convert, {Type(C64, {3})}, {}, {f32({3})}), std::vector{f32({3})});
  EXPECT_EQ(infer(OpKind::Compare, {i32({3}), i32({3})},
                  attrs({{"comparison_direction", ComparisonDirection::LT}})),
            std::vector{i1({3})});
  EXPECT_EQ(infer(OpKind::BitcastConvert, {f32({2})}, {}, {Type(ElementType::i8, {2, 4})}),
            std::vector{Type(ElementType::i8, {2, 4})});
  EXPECT_EQ(infer(OpKind::Transpose, {f32({2, 3, 4})}, attrs({{"permutation", Ints{2, 0, 1}}})),
            std::vector{f32({4, 2, 3})});
  EXPECT_EQ(infer(OpKind::Slice, {f32({10})},
                  attrs({{"start_indices", Ints{1}}, {"limit_indices", Ints{8}}, {"strides", Ints{3}}})),
            std::vector{f32({3})});
  // The largest stride takes one element (ceil(4 / stride); adding stride - 1 first overflowed to 0).
  EXPECT_EQ(infer(OpKind::Slice, {f32({2, 4})},
                  attrs({{"start_indices", Ints{1, 0}}, {"limit_indices", Ints{2, 4}},
                         {"strides", Ints{1, std::numeric_limits<int64_t>::max()}}})),
            std::vector{f32({1, 1})});
  EXPECT_EQ(infer(OpKind::Pad, {f32({3}), f32({})},
                  attrs({{"edge_padding_low", Ints{1}}, {"edge_padding_high", Ints{-1}},
                         {"interior_padding", Ints{2}}})),
            std::vector{f32({7})});
  EXPECT_EQ(infer(OpKind::Concatenate, {f32({2, 3}), f32({4, 3})}, attrs({{"dimension", int64_t{0}}})),
            std::vector{f32({6, 3})});
  EXPECT_EQ(infer(OpKind::DotGeneral, {f32({5, 2, 3}), f32({5, 3, 4})},
                  attrs({{"dot_dimension_numbers", dot_dims({0}, {0}, {2}, {1})}})),
            std::vector{f32({5, 2, 4})});
  EXPECT_EQ(infer(OpKind::Reduce, {f32({2, 3}), i32({2, 3}), f32({}), i32({})},
                  attrs({{"dimensions", Ints{1}}})),
            (std::vector{f32({2}), i32({2})}));
  // A 3x5 operand gathered by 2 index rows, keeping a window of 2 along dimension 1.
  EXPECT_EQ(infer(OpKind::Gather, {f32({3, 5}), i32({2, 1})},
                  attrs({{"dimension_numbers", gather_dims({1}, {0}, {0}, 1)}, {"slice_sizes", Ints{1, 2}}})),
            std::vector{f32({2, 2})});
  EXPECT_EQ(infer(OpKind::AllGather, {f32({2, 3})},
                  attrs({{"all_gather_dim", int64_t{1}}, {"replica_groups", IntMatrix{2, 2, {0, 1, 2, 3}}}})),
            std::vector{f32({2, 6})});
  EXPECT_EQ(infer(OpKind::AllToAll, {f32({4, 2})},
                  attrs({{"split_dimension", int64_t{0}}, {"concat_dimension", int64_t{1}},
                         {"split_count", int64_t{2}}})),
            std::vector{f32({2, 4})});
  EXPECT_EQ(infer(OpKind::ReplicaId, {}), std::vector{Type(ElementType::ui32, {})});
  // Shardy's explicit collectives keep the operand's type; sdy.constant has its value's.
  EXPECT_EQ(infer(OpKind::SdyAllGather, {i32({4, 4})},
                  attrs({{"gathering_axes", rows()}, {"out_sharding", Sharding{"m", {{}, {}}, {}, {}}}})),
            std::vector{i32({4, 4})});
  EXPECT_EQ(infer(OpKind::SdyAllReduce, {f32({3})},
                  attrs({{"reduction_axes", Sharding{"m", {{"x", "y"}}, {}, {}}},
                         {"out_sharding", Sharding{"m", {{}}, {}, {}}}})),
            std::vector{f32({3})});
  EXPECT_EQ(infer(OpKind::SdyAllToAll, {f32({2, 2, 2})},
                  attrs({{"params", Sharding{"m", {{"x"}, {"y"}}, {}, {}}},
                         {"param_dims", IntMatrix{2, 2, {0, 1, 2, 1}}},
                         {"out_sharding", Sharding{"m", {{}, {"x", "y"}, {}}, {}, {}}}})),
            std::vector{f32({2, 2, 2})});
  EXPECT_EQ(infer(OpKind::SdyConstant, {}, attrs({{"value", Literal(i32({2, 3}))}})),
            std::vector{i32({2, 3})});
}

}  // namespace
}  // namespace tessera::ir
