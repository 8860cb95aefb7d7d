// Reference kernels of the window ops and sort: convolution (feature and batch groups, padding,
// lhs and rhs dilation, strides, window reversal), reduce_window (any body, several inputs, base
// and window dilations), select_and_scatter and sort (several inputs, any comparator).
//
// convolution accumulates like dot_general (kernels_reduce.cpp): each product and partial sum is
// rounded to f32 (f64 for f64 results) in a fixed order, kernel spatial positions outer and input
// features inner. Positions that fall into padding or between dilated input elements contribute
// nothing (they hold zeros). reduce_window folds padding positions as the init value, since the
// spec pads with it. select_and_scatter never selects a padding position; a window with no
// operand element scatters nothing. sort is always stable (a stable sort is a valid unstable one).
#include <algorithm>
#include <numeric>

#include "interp/kernels.h"
#include "ir/window.h"

namespace tessera::interp {

using ir::Literal;

namespace {

template <typename Acc>
Literal convolve(const EvalContext& ctx) {
  const Literal& lhs = ctx.operand(0);
  const Literal& rhs = ctx.operand(1);
  const auto& dn = ctx.op.attrs().get<ir::ConvDims>("dimension_numbers");
  const auto& attrs = ctx.op.attrs();
  size_t s = dn.input_spatial.size();
  auto at = [](const std::vector<int64_t>& v, int64_t d) { return v[static_cast<size_t>(d)]; };
  std::vector<int64_t> ksize;
  for (int64_t d : dn.kernel_spatial) ksize.push_back(at(rhs.shape(), d));
  ir::Window w = ir::read_window(attrs, ir::kConvolutionWindow, s, ksize);
  int64_t groups = attrs.get_or<int64_t>("feature_group_count", 1);
  int64_t batch_groups = attrs.get_or<int64_t>("batch_group_count", 1);
  std::vector<Acc> a = elements_as<Acc>(lhs), b = elements_as<Acc>(rhs);
  std::vector<int64_t> ls = lhs.strides(), rs = rhs.strides();
  Literal out(ctx.result_type());
  int64_t out_batch = at(out.shape(), dn.output_batch);
  int64_t out_features = at(out.shape(), dn.output_feature);
  int64_t features = at(rhs.shape(), dn.kernel_input_feature);  // per feature group
  int64_t lf = at(ls, dn.input_feature), rf = at(rs, dn.kernel_input_feature);
  const bool wide = out.element() == ir::ElementType::f64;
  auto rounding = [wide](double v) { return wide ? v : static_cast<double>(static_cast<float>(v)); };
  (void)rounding;
  int64_t flat = 0;
  for_each_index(out.shape(), [&](const std::vector<int64_t>& index) {
    int64_t of = at(index, dn.output_feature);
    int64_t group = of / (out_features / groups);
    int64_t batch_group = of / (out_features / batch_groups);
    int64_t lbase = (batch_group * out_batch + at(index, dn.output_batch)) * at(ls, dn.input_batch) +
                    group * features * lf;
    int64_t rbase = of * at(rs, dn.kernel_output_feature);
    Acc sum{};
    for_each_index(ksize, [&](const std::vector<int64_t>& k) {
      int64_t li = lbase, ri = rbase;
      for (size_t i = 0; i < s; ++i) {
        int64_t p = at(index, dn.output_spatial[i]) * w.stride[i] + k[i] * w.window_dilation[i] - w.pad_lo[i];
        if (p < 0 || p % w.base_dilation[i] != 0) return;  // padding or a dilation hole
        int64_t x = p / w.base_dilation[i];
        if (x >= at(lhs.shape(), dn.input_spatial[i])) return;
        li += x * at(ls, dn.input_spatial[i]);
        ri += (w.reversal[i] ? ksize[i] - 1 - k[i] : k[i]) * at(rs, dn.kernel_spatial[i]);
      }
      for (int64_t c = 0; c < features; ++c) {
        const Acc& x = a[static_cast<size_t>(li + c * lf)];
        const Acc& y = b[static_cast<size_t>(ri + c * rf)];
        if constexpr (std::is_same_v<Acc, double>)
          sum = rounding(sum + rounding(x * y));
        else
          sum += x * y;  // uint64_t wraps
      }
    });
    if constexpr (std::is_same_v<Acc, uint64_t>)
      if (ir::is_bool(out.element())) sum = sum != 0;
    write_scalar(out, flat++, scalar_of(sum, out.element()));
  });
  return out;
}

// The position in the operand of window element `k` of window `index` along each dimension, or
// false when it falls into padding or a base-dilation hole.
bool window_position(const ir::Window& w, std::span<const int64_t> shape,
                     const std::vector<int64_t>& index, const std::vector<int64_t>& k,
                     std::vector<int64_t>& pos) {
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t p = index[d] * w.stride[d] + k[d] * w.window_dilation[d] - w.pad_lo[d];
    if (p < 0 || p % w.base_dilation[d] != 0) return false;
    pos[d] = p / w.base_dilation[d];
    if (pos[d] >= shape[d]) return false;
  }
  return true;
}

Literal scalar_from(const Literal& x, int64_t i) {
  Literal s(ir::Type(x.element(), {}));
  copy_element(x, i, s, 0);
  return s;
}

// A region that returns one tensor<i1>: its value on `args`.
bool predicate(const EvalContext& ctx, size_t region, std::vector<Literal> args, const char* what) {
  Results r = ctx.run_region(region, std::move(args));
  if (r.size() != 1 || r[0].type() != ir::Type(ir::ElementType::i1, {}))
    ctx.fail("{} must return one tensor<i1>", what);
  return r[0].get_int(0) != 0;
}

}  // namespace

Results eval_Convolution(const EvalContext& ctx) {
  ir::ElementType e = ctx.result_type().element;
  if (ir::is_complex(e)) return one(convolve<std::complex<double>>(ctx));
  if (ir::is_float(e)) return one(convolve<double>(ctx));
  return one(convolve<uint64_t>(ctx));
}

Results eval_ReduceWindow(const EvalContext& ctx) {
  size_t n = ctx.num_operands() / 2;
  const Literal& first = ctx.operand(0);
  ir::Window w = ir::read_window(ctx.op.attrs(), ir::kReduceWindow, first.shape().size());
  Results acc;
  std::vector<const Literal*> inputs, inits;
  for (size_t k = 0; k < n; ++k) {
    acc.emplace_back(ctx.result_type(k));
    for (int64_t i = 0; i < acc[k].num_elements(); ++i) convert_element(ctx.operand(n + k), 0, acc[k], i);
    inputs.push_back(&ctx.operand(k));
    inits.push_back(&ctx.operand(n + k));
  }
  ScalarBody body(ctx, 0, n);
  std::vector<int64_t> strides = first.strides(), pos(first.shape().size());
  int64_t flat = 0;
  for_each_index(acc[0].shape(), [&](const std::vector<int64_t>& index) {
    for_each_index(w.size, [&](const std::vector<int64_t>& k) {
      if (window_position(w, first.shape(), index, k, pos))
        body.apply(acc, flat, inputs, flat_index(pos, strides));
      else
        body.apply(acc, flat, inits, 0);
    });
    ++flat;
  });
  return acc;
}

Results eval_SelectAndScatter(const EvalContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const Literal& source = ctx.operand(1);
  ir::Window w = ir::read_window(ctx.op.attrs(), ir::kSelectAndScatterWindow, operand.shape().size());
  Results result;
  result.emplace_back(ctx.result_type());
  for (int64_t i = 0; i < result[0].num_elements(); ++i) convert_element(ctx.operand(2), 0, result[0], i);
  ScalarBody scatter(ctx, 1, 1);
  const Literal* xs[] = {&source};
  std::vector<int64_t> strides = operand.strides(), pos(operand.shape().size());
  int64_t flat = 0;
  for_each_index(source.shape(), [&](const std::vector<int64_t>& index) {
    int64_t selected = -1;
    for_each_index(w.size, [&](const std::vector<int64_t>& k) {
      if (!window_position(w, operand.shape(), index, k, pos)) return;
      int64_t at = flat_index(pos, strides);
      if (selected < 0 ||
          !predicate(ctx, 0, {scalar_from(operand, selected), scalar_from(operand, at)}, "select"))
        selected = at;
    });
    if (selected >= 0) scatter.apply(result, selected, xs, flat);
    ++flat;
  });
  return result;
}

Results eval_Sort(const EvalContext& ctx) {
  size_t n = ctx.num_operands();
  const Literal& first = ctx.operand(0);
  int64_t rank = static_cast<int64_t>(first.shape().size());
  int64_t dim = ctx.op.attrs().get<int64_t>("dimension");
  if (dim < 0) dim += rank;
  Results out;
  for (size_t i = 0; i < n; ++i) out.push_back(ctx.operand(i));
  if (first.num_elements() == 0) return out;
  std::vector<int64_t> strides = first.strides();
  int64_t length = first.shape()[static_cast<size_t>(dim)];
  int64_t step = strides[static_cast<size_t>(dim)];
  std::vector<int64_t> rows = first.shape();
  rows[static_cast<size_t>(dim)] = 1;
  std::vector<int64_t> order(static_cast<size_t>(length));
  for_each_index(rows, [&](const std::vector<int64_t>& index) {
    int64_t base = flat_index(index, strides);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      std::vector<Literal> args;
      for (size_t i = 0; i < n; ++i) {
        args.push_back(scalar_from(ctx.operand(i), base + x * step));
        args.push_back(scalar_from(ctx.operand(i), base + y * step));
      }
      return predicate(ctx, 0, std::move(args), "comparator");
    });
    for (size_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < length; ++j)
        copy_element(ctx.operand(i), base + order[static_cast<size_t>(j)] * step, out[i], base + j * step);
  });
  return out;
}

}  // namespace tessera::interp
