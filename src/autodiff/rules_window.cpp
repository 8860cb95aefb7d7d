// VJP rules of the window ops and sort, as JAX transposes them (jax/_src/lax/convolution.py and
// windowed_reductions.py), and the helpers of window_rules.h.
//
// convolution's operand cotangents are convolutions: the lhs one convolves dy with the kernel
// reversed along its spatial dimensions and its feature dimensions swapped, strides and lhs
// dilation exchanged, padded so the result has lhs's shape; the kernel one convolves lhs with dy,
// batch and feature roles exchanged. Feature groups reshape the kernel (lhs) or become batch
// groups (kernel), as JAX does. reduce_window with add transposes into a reduce_window of the
// padded, stride-dilated cotangent; with max or min into select_and_scatter (the first chosen
// position in window order takes dy, like JAX's select_and_scatter_add). select_and_scatter with an
// add scatter is linear in its source: the source cotangent gathers dy at the selected positions.
// sort permutes: dy goes back through the inverse permutation (a sort of the permutation).
#include <algorithm>
#include <numeric>

#include "autodiff/window_rules.h"
#include "ir/clone.h"

namespace tessera::autodiff {

using ir::ComparisonDirection;
using ir::OpKind;
using ir::Window;

Tensor reshape_axis_out_of(int64_t src, int64_t size1, const Tensor& x) {
  std::vector<int64_t> shape = x.shape();
  int64_t size2 = shape[static_cast<size_t>(src)] / size1;
  shape[static_cast<size_t>(src)] = size2;
  shape.insert(shape.begin() + src, size1);
  return ir::reshape(x, shape);
}

Tensor reshape_axis_into(int64_t src, int64_t dst, const Tensor& x) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != src) perm.push_back(d);
  perm.insert(perm.begin() + dst, src);
  std::vector<int64_t> shape = x.shape();
  int64_t merged = shape[static_cast<size_t>(src)];
  shape.erase(shape.begin() + src);
  shape[static_cast<size_t>(dst)] *= merged;
  return ir::reshape(ir::transpose(x, perm), shape);
}

Window window_of(const ir::Op& op) {
  if (op.kind() == OpKind::Convolution) {
    const auto& d = op.attrs().get<ir::ConvDims>("dimension_numbers");
    std::vector<int64_t> sizes;
    for (int64_t k : d.kernel_spatial) sizes.push_back(op.operand(1)->type().shape[static_cast<size_t>(k)]);
    return ir::read_window(op.attrs(), ir::kConvolutionWindow, sizes.size(), sizes);
  }
  size_t rank = static_cast<size_t>(op.operand(0)->type().rank());
  return ir::read_window(op.attrs(), op.kind() == OpKind::ReduceWindow ? ir::kReduceWindow
                                                                       : ir::kSelectAndScatterWindow,
                         rank);
}

ComparisonDirection select_direction(const ir::Op& op) {
  const ir::Block& body = op.region(0);
  const ir::Op* ret = body.terminator();
  if (body.ops().size() == 2 && body.arguments().size() == 2 && ret && ret->operands().size() == 1) {
    const ir::Op& cmp = *body.ops().front();
    if (cmp.kind() == OpKind::Compare && ret->operand(0) == cmp.result(0) &&
        cmp.operand(0) == body.argument(0) && cmp.operand(1) == body.argument(1)) {
      auto dir = cmp.attrs().get<ComparisonDirection>("comparison_direction");
      if (dir != ComparisonDirection::EQ && dir != ComparisonDirection::NE) return dir;
    }
  }
  refuse(op, "only a select region that is one compare GE, GT, LE or LT of its two arguments has a rule");
}

Tensor window_pick(const Tensor& keys, const Tensor& values, const Window& w, ComparisonDirection keep) {
  ir::Builder& b = keys.builder();
  bool largest = keep == ComparisonDirection::GE || keep == ComparisonDirection::GT;
  Tensor pad_key = ir::extreme(keys, largest);
  Tensor pad_value = b.scalar(values.element(), 0);
  ir::AttrMap a;
  ir::write_window(a, ir::kReduceWindow, w);
  return b.emit_with_regions(OpKind::ReduceWindow, {keys, values, pad_key, pad_value}, std::move(a), {},
                             [&](ir::Op& op) {
                               ir::Block& body = op.add_region();
                               ir::Builder rb(b.module(), body);
                               Tensor ak = rb.wrap(body.add_argument(ir::Type(keys.element(), {})));
                               Tensor av = rb.wrap(body.add_argument(ir::Type(values.element(), {})));
                               Tensor xk = rb.wrap(body.add_argument(ir::Type(keys.element(), {})));
                               Tensor xv = rb.wrap(body.add_argument(ir::Type(values.element(), {})));
                               Tensor kept = ir::compare(ak, xk, keep);
                               std::vector<ir::Value*> out{ir::select(kept, ak, xk).value(),
                                                           ir::select(kept, av, xv).value()};
                               body.append(std::make_unique<ir::Op>(OpKind::Return, out, std::vector<ir::Type>{}));
                             })[1];
}

std::vector<Tensor> sort_with(const ir::Op& op, const std::vector<Tensor>& xs, const std::vector<Tensor>& extra) {
  ir::Builder& b = xs.at(0).builder();
  std::vector<Tensor> operands = xs;
  operands.insert(operands.end(), extra.begin(), extra.end());
  return b.emit_with_regions(OpKind::Sort, operands, op.attrs(), {}, [&](ir::Op& copy) {
    const ir::Block& from = op.region(0);
    ir::Block& body = copy.add_region();
    ir::ValueMap map;
    for (const auto& arg : from.arguments()) map[arg.get()] = body.add_argument(arg->type());
    for (const Tensor& e : extra) {
      body.add_argument(ir::Type(e.element(), {}));
      body.add_argument(ir::Type(e.element(), {}));
    }
    for (const auto& o : from.ops()) ir::clone_op(body, *o, map);
  });
}

namespace {

int64_t dilate(int64_t n, int64_t by) { return n == 0 ? 0 : 1 + by * (n - 1); }

void require_plain_window(const VjpContext& c, const Window& w) {
  if (std::find(w.reversal.begin(), w.reversal.end(), true) != w.reversal.end())
    c.fail("window_reversal has no gradient rule (JAX never emits it)");
}

// d lhs = conv(dy, reverse(rhs) with in/out features swapped; strides <-> lhs dilation)
Tensor conv_lhs_cotangent(const Tensor& g, const Tensor& lhs, Tensor rhs, const ir::ConvDims& d,
                          const Window& fw, int64_t groups, int64_t batch_groups) {
  if (groups > 1 || batch_groups > 1) {
    int64_t n = groups > 1 ? groups : batch_groups;
    rhs = reshape_axis_out_of(d.kernel_output_feature, n, rhs);
    rhs = reshape_axis_into(d.kernel_output_feature, d.kernel_input_feature, rhs);
    groups = n;
  }
  ir::ConvDims t;
  t.input_batch = d.output_batch;
  t.input_feature = d.output_feature;
  t.input_spatial = d.output_spatial;
  t.kernel_input_feature = d.kernel_output_feature;
  t.kernel_output_feature = d.kernel_input_feature;
  t.kernel_spatial = d.kernel_spatial;
  t.output_batch = d.input_batch;
  t.output_feature = d.input_feature;
  t.output_spatial = d.input_spatial;
  size_t s = d.input_spatial.size();
  Window w;
  for (size_t i = 0; i < s; ++i) {
    auto at = [](const Tensor& x, int64_t dim) { return x.shape()[static_cast<size_t>(dim)]; };
    int64_t lhs_dilated = dilate(at(lhs, d.input_spatial[i]), fw.base_dilation[i]);
    int64_t rhs_dilated = dilate(at(rhs, d.kernel_spatial[i]), fw.window_dilation[i]);
    int64_t out_dilated = dilate(at(g, d.output_spatial[i]), fw.stride[i]);
    int64_t before = rhs_dilated - fw.pad_lo[i] - 1;
    w.size.push_back(at(rhs, d.kernel_spatial[i]));
    w.stride.push_back(fw.base_dilation[i]);
    w.base_dilation.push_back(fw.stride[i]);
    w.window_dilation.push_back(fw.window_dilation[i]);
    w.pad_lo.push_back(before);
    w.pad_hi.push_back(lhs_dilated + rhs_dilated - 1 - out_dilated - before);
    w.reversal.push_back(false);
  }
  Tensor out = ir::convolution(g, ir::reverse(rhs, d.kernel_spatial), t, w, groups, 1);
  if (batch_groups > 1) {
    out = reshape_axis_out_of(d.input_feature, batch_groups, out);
    out = reshape_axis_into(d.input_feature, d.input_batch, out);
  }
  return out;
}

// d rhs = conv(lhs, dy) with batch and feature roles exchanged; strides <-> rhs dilation
Tensor conv_rhs_cotangent(const Tensor& g, const Tensor& lhs, const Tensor& rhs, const ir::ConvDims& d,
                          const Window& fw, int64_t groups, int64_t batch_groups) {
  int64_t new_groups = batch_groups > 1 ? batch_groups : 1;
  int64_t new_batch_groups = groups > 1 ? groups : 1;
  ir::ConvDims t;
  t.input_batch = d.input_feature;
  t.input_feature = d.input_batch;
  t.input_spatial = d.input_spatial;
  t.kernel_input_feature = d.output_batch;
  t.kernel_output_feature = d.output_feature;
  t.kernel_spatial = d.output_spatial;
  t.output_batch = d.kernel_input_feature;
  t.output_feature = d.kernel_output_feature;
  t.output_spatial = d.kernel_spatial;
  Window w;
  for (size_t i = 0; i < d.input_spatial.size(); ++i) {
    auto at = [](const Tensor& x, int64_t dim) { return x.shape()[static_cast<size_t>(dim)]; };
    int64_t lhs_dilated = dilate(at(lhs, d.input_spatial[i]), fw.base_dilation[i]);
    int64_t rhs_dilated = dilate(at(rhs, d.kernel_spatial[i]), fw.window_dilation[i]);
    int64_t out_dilated = dilate(at(g, d.output_spatial[i]), fw.stride[i]);
    w.size.push_back(at(g, d.output_spatial[i]));
    w.stride.push_back(fw.window_dilation[i]);
    w.base_dilation.push_back(fw.base_dilation[i]);
    w.window_dilation.push_back(fw.stride[i]);
    w.pad_lo.push_back(fw.pad_lo[i]);
    w.pad_hi.push_back((out_dilated - lhs_dilated) + (rhs_dilated - fw.pad_lo[i] - 1));
    w.reversal.push_back(false);
  }
  return ir::convolution(lhs, g, t, w, new_groups, new_batch_groups);
}

}  // namespace

// convolution(l, r): dl = conv(dy, rev(r)) (JAX's _conv_general_dilated_transpose_lhs),
// dr = conv(l, dy) (_conv_general_dilated_transpose_rhs)
void vjp_Convolution(VjpContext& c) {
  require_real(c.op);
  Window w = window_of(c.op);
  require_plain_window(c, w);
  const auto& d = c.op.attrs().get<ir::ConvDims>("dimension_numbers");
  int64_t groups = c.op.attrs().get_or<int64_t>("feature_group_count", 1);
  int64_t batch_groups = c.op.attrs().get_or<int64_t>("batch_group_count", 1);
  Tensor dy = c.dy();
  if (is_differentiable(c.x(0).type()))
    c.add(0, conv_lhs_cotangent(dy, c.x(0), c.x(1), d, w, groups, batch_groups));
  if (is_differentiable(c.x(1).type()))
    c.add(1, conv_rhs_cotangent(dy, c.x(0), c.x(1), d, w, groups, batch_groups));
}

// reduce_window(x, init; +): dx = reduce_window(pad(dy, interior stride - 1); +) over the window,
//   sliced by the base dilation; dinit = sum(dy * (1 + padding positions in the window))
// reduce_window(x, init; max or min): dx = select_and_scatter(x, dy; GE or LE, +); no dinit
void vjp_ReduceWindow(VjpContext& c) {
  if (c.num_operands() != 2)
    c.fail("a reduce_window of {} inputs at once is not differentiated", c.num_operands() / 2);
  std::optional<OpKind> k = body_combiner(c.op.region(0));
  if (k != OpKind::Add && k != OpKind::Maximum && k != OpKind::Minimum)
    c.fail("a reduce_window whose body is {} has no gradient rule; only add, maximum and minimum do",
           describe_body(c.op.region(0)));
  require_real(c.op);
  Window w = window_of(c.op);
  const Tensor& x = c.x(0);
  Tensor dy = c.dy();
  size_t rank = w.rank();
  if (*k != OpKind::Add) {
    for (size_t d = 0; d < rank; ++d)
      if (w.base_dilation[d] != 1 || w.window_dilation[d] != 1)
        c.fail("a max or min reduce_window with base or window dilation has no gradient rule "
               "(select_and_scatter has no dilations)");
    Window sw = w;
    c.add(0, ir::select_and_scatter(x, dy, c.b.scalar(dy.element(), 0), sw,
                                    *k == OpKind::Maximum ? ComparisonDirection::GE : ComparisonDirection::LE,
                                    OpKind::Add));
    return;
  }
  std::vector<int64_t> low, high, interior;
  Window sum;
  for (size_t d = 0; d < rank; ++d) {
    int64_t in_dilated = dilate(x.shape()[d], w.base_dilation[d]);
    int64_t win_dilated = dilate(w.size[d], w.window_dilation[d]);
    int64_t out_dilated = dilate(dy.shape()[d], w.stride[d]);
    int64_t before = win_dilated - w.pad_lo[d] - 1;
    low.push_back(before);
    high.push_back(in_dilated + win_dilated - 1 - out_dilated - before);
    interior.push_back(w.stride[d] - 1);
    sum.size.push_back(w.size[d]);
    sum.stride.push_back(1);
    sum.base_dilation.push_back(1);
    sum.window_dilation.push_back(w.window_dilation[d]);
    sum.pad_lo.push_back(0);
    sum.pad_hi.push_back(0);
    sum.reversal.push_back(false);
  }
  Tensor zero = c.b.scalar(dy.element(), 0);
  Tensor padded = ir::pad(dy, zero, low, high, interior);
  Tensor dx = ir::reduce_window(padded, zero, sum, OpKind::Add);
  std::vector<int64_t> start(rank, 0), limit = dx.shape();
  c.add(0, ir::slice(dx, start, limit, w.base_dilation));
  if (is_differentiable(c.x(1).type())) {
    Tensor real = ir::reduce_window(full_like(c.b, x.type(), 1), c.b.scalar(x.element(), 0), w, OpKind::Add);
    double positions = 1;
    for (int64_t s : w.size) positions *= static_cast<double>(s);
    c.add(1, ir::sum(dy * (1.0 + positions - real)));
  }
}

// select_and_scatter(x, s, init; select, +): ds = dy at the position each window selects;
// dinit = sum(dy); no dx (the selection is piecewise constant in x)
void vjp_SelectAndScatter(VjpContext& c) {
  if (body_combiner(c.op.region(1)) != OpKind::Add)
    c.fail("a scatter region of {} has no gradient rule; only add does", describe_body(c.op.region(1)));
  require_real(c.op);
  ComparisonDirection keep = select_direction(c.op);
  Tensor dy = c.dy();
  c.add(1, window_pick(c.x(0), dy, window_of(c.op), keep));
  c.add(2, ir::sum(dy));
}

// sort(xs): dx_i = dy_i sent back through the permutation p (sort(p, dy_i) by p)
void vjp_Sort(VjpContext& c) {
  size_t n = c.num_operands();
  int64_t rank = c.x(0).rank();
  int64_t dim = c.op.attrs().get<int64_t>("dimension");
  if (dim < 0) dim += rank;
  std::vector<Tensor> xs;
  for (size_t i = 0; i < n; ++i) xs.push_back(c.x(i));
  Tensor iota = c.b.iota(ir::Type(ir::ElementType::i64, c.x(0).shape()), dim);
  Tensor perm = sort_with(c.op, xs, {iota}).back();
  for (size_t i = 0; i < n; ++i) {
    if (!c.has_cotangent(i) || !is_differentiable(c.x(i).type())) continue;
    c.add(i, ir::sort({perm, c.dy(i)}, dim, ComparisonDirection::LT)[1]);
  }
}

}  // namespace tessera::autodiff
