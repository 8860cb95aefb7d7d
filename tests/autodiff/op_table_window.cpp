// Rows of the op table (op_table.h) for the window ops and sort: convolutions in NHWC and NCHW
// layouts with strides, padding, lhs and rhs dilation, feature groups and batch groups;
// reduce_window with add (init differentiated, base dilation, padding) and with max (a max-pool);
// select_and_scatter; a sort of two operands by the first.
#include "ir/builder_window.h"
#include "op_table.h"

namespace tessera::autodiff::testing {

using ir::ComparisonDirection;
using ir::FunctionBuilder;

namespace {

using P = const std::vector<Tensor>&;

ir::Window window(std::vector<int64_t> size, std::vector<int64_t> stride, std::vector<int64_t> base,
                  std::vector<int64_t> dilation, std::vector<int64_t> lo, std::vector<int64_t> hi) {
  ir::Window w;
  w.size = std::move(size);
  w.stride = std::move(stride);
  w.base_dilation = std::move(base);
  w.window_dilation = std::move(dilation);
  w.pad_lo = std::move(lo);
  w.pad_hi = std::move(hi);
  w.reversal.assign(w.size.size(), false);
  return w;
}

// [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]
const ir::ConvDims kNhwc{0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
// [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]
const ir::ConvDims kNchw{0, 1, {2, 3}, 1, 0, {2, 3}, 0, 1, {2, 3}};

}  // namespace

std::vector<Row> window_rows() {
  return {
      {"convolution_nhwc_strided_padded_rhs_dilated", {OpKind::Convolution}, {{{2, 5, 5, 3}}, {{3, 3, 3, 4}}},
       [](FunctionBuilder&, P p) {
         return ir::convolution(p[0], p[1], kNhwc, window({3, 3}, {2, 1}, {1, 1}, {1, 2}, {1, 0}, {1, 1}));
       }},
      {"convolution_nchw_lhs_dilated", {OpKind::Convolution}, {{{2, 3, 4, 4}}, {{4, 3, 2, 2}}},
       [](FunctionBuilder&, P p) {
         return ir::convolution(p[0], p[1], kNchw, window({2, 2}, {1, 2}, {2, 1}, {1, 1}, {0, 1}, {0, 0}));
       }},
      {"convolution_feature_groups", {OpKind::Convolution}, {{{2, 4, 4, 4}}, {{2, 2, 2, 6}}},
       [](FunctionBuilder&, P p) {
         return ir::convolution(p[0], p[1], kNhwc, window({2, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}), 2, 1);
       }},
      {"convolution_batch_groups", {OpKind::Convolution}, {{{4, 4, 4, 2}}, {{2, 2, 2, 6}}},
       [](FunctionBuilder&, P p) {
         return ir::convolution(p[0], p[1], kNhwc, window({2, 2}, {2, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}), 1, 2);
       }},
      {"reduce_window_add", {OpKind::ReduceWindow}, {{{4, 6}}, {{}}},
       [](FunctionBuilder&, P p) {
         return ir::reduce_window(p[0], p[1], window({2, 3}, {2, 1}, {1, 2}, {1, 1}, {1, 0}, {0, 2}), OpKind::Add);
       }},
      {"reduce_window_add_window_dilated", {OpKind::ReduceWindow}, {{{5, 4}}, {{}}},
       [](FunctionBuilder&, P p) {
         return ir::reduce_window(p[0], p[1], window({2, 2}, {1, 2}, {1, 1}, {2, 1}, {0, 1}, {1, 0}), OpKind::Add);
       }},
      {"reduce_window_max_pool", {OpKind::ReduceWindow}, {{{2, 6, 6, 3}}},
       [](FunctionBuilder&, P p) {
         return ir::reduce_window(p[0], ir::extreme(p[0], true),
                                  window({1, 3, 3, 1}, {1, 2, 2, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {0, 1, 1, 0}, {0, 1, 1, 0}),
                                  OpKind::Maximum);
       }},
      {"select_and_scatter", {OpKind::SelectAndScatter}, {{{4, 6}}, {{3, 2}}, {{}}},
       [](FunctionBuilder&, P p) {
         return ir::select_and_scatter(p[0], p[1], p[2], window({2, 3}, {1, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}),
                                       ComparisonDirection::GE, OpKind::Add);
       }},
      {"sort_two_operands", {OpKind::Sort}, {{{3, 5}}, {{3, 5}}},
       [](FunctionBuilder&, P p) {
         std::vector<Tensor> s = ir::sort({p[0], p[1]}, 1, ComparisonDirection::LT);
         return s[0] + s[1] * 3.0;
       }},
  };
}

}  // namespace tessera::autodiff::testing
