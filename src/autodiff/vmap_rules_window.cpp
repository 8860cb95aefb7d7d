// vmap rules of the window ops and sort. reduce_window, select_and_scatter and sort gain a leading
// window dimension of size 1 (sort: its dimension moves by one); convolution folds the batch into
// its batch, feature or group dimensions as JAX does.
#include "autodiff/vmap_rules.h"
#include "autodiff/window_rules.h"

namespace tessera::autodiff {

namespace {

ir::Window with_unit_front(ir::Window w) {
  w.size.insert(w.size.begin(), 1);
  w.stride.insert(w.stride.begin(), 1);
  w.base_dilation.insert(w.base_dilation.begin(), 1);
  w.window_dilation.insert(w.window_dilation.begin(), 1);
  w.pad_lo.insert(w.pad_lo.begin(), 0);
  w.pad_hi.insert(w.pad_hi.begin(), 0);
  w.reversal.insert(w.reversal.begin(), false);
  return w;
}

// The op's attributes with the window replaced by `w`.
ir::AttrMap with_window(const ir::Op& op, const ir::WindowNames& names, const ir::Window& w) {
  ir::AttrMap a;
  for (const auto& [k, v] : op.attrs()) a.set(k, v);
  for (const char* n : {names.size, names.stride, names.base_dilation, names.window_dilation,
                        names.padding, names.reversal})
    if (n != nullptr) a.erase(n);
  ir::write_window(a, names, w);
  return a;
}

}  // namespace

// conv(l, r)[b] = conv(l[b], r[b]), as JAX batches it (_conv_general_dilated_batch_rule):
// both batched -> B into the input features and B times the feature groups (or, with batch groups,
// into the input batch and B times the batch groups), and into the kernel's output features;
// l batched -> B into the input batch (inside each batch group); r batched -> B into the kernel's
// output features (inside each group). The result's B is split back out and moved to the front.
void vmap_Convolution(VmapContext& c) {
  const ir::ConvDims& d = c.op.attrs().get<ir::ConvDims>("dimension_numbers");
  int64_t groups = c.op.attrs().get_or<int64_t>("feature_group_count", 1);
  int64_t batch_groups = c.op.attrs().get_or<int64_t>("batch_group_count", 1);
  int64_t B = c.batch();
  ir::AttrMap a = c.op.attrs();
  Tensor lhs = c.x(0), rhs = c.x(1);
  int64_t at = d.output_feature;  // the result dimension whose major part is B
  int64_t inner = 1;              // B sits inside this many groups of that dimension
  if (c.batched(0) && c.batched(1)) {
    if (batch_groups > 1) {
      lhs = reshape_axis_into(0, d.input_batch, lhs);
      a.set("batch_group_count", batch_groups * B);
    } else {
      lhs = reshape_axis_into(0, d.input_feature, lhs);
      a.set("feature_group_count", groups * B);
    }
    rhs = reshape_axis_into(0, d.kernel_output_feature, rhs);
  } else if (c.batched(0)) {
    if (batch_groups > 1) {  // [B, .., N, ..] -> [.., BG x B x N/BG, ..]
      lhs = reshape_axis_out_of(d.input_batch + 1, batch_groups, lhs);
      lhs = reshape_axis_into(0, d.input_batch + 1, lhs);
      lhs = reshape_axis_into(d.input_batch, d.input_batch, lhs);
    } else {
      lhs = reshape_axis_into(0, d.input_batch, lhs);
    }
    at = d.output_batch;
  } else {
    int64_t n = groups > 1 ? groups : batch_groups;  // [B, .., O, ..] -> [.., n x B x O/n, ..]
    int64_t k = d.kernel_output_feature;
    if (n > 1) {
      rhs = reshape_axis_out_of(k + 1, n, rhs);
      rhs = reshape_axis_into(0, k + 1, rhs);
      rhs = reshape_axis_into(k, k, rhs);
    } else {
      rhs = reshape_axis_into(0, k, rhs);
    }
    inner = n;
  }
  std::vector<int64_t> shape = c.result_type().shape;
  shape[static_cast<size_t>(at)] *= B;
  Tensor y = c.again({lhs, rhs}, a, std::vector<ir::Type>{c.result_type().with_shape(shape)})[0];
  if (inner > 1) {  // [.., n x B x O/n, ..] -> [.., B, n x O/n, ..]
    y = reshape_axis_out_of(at, inner, y);
    y = reshape_axis_out_of(at + 1, B, y);
    y = reshape_axis_into(at, at + 1, y);
  } else {
    y = reshape_axis_out_of(at, B, y);
  }
  c.set(0, move_axis(y, at, 0));
}

// reduce_window(xs, inits)[b] = reduce_window(xs[b], inits) with a unit window in front; a batched
// init (one input): add -> reduce_window(x[b], 0) + (1 + padding positions) * init[b];
// max / min -> max(reduce_window(x[b], identity), init[b]) (min alike)
void vmap_ReduceWindow(VmapContext& c) {
  size_t n = c.num_operands() / 2;
  ir::Window w = with_unit_front(window_of(c.op));
  bool batched_init = false;
  for (size_t i = n; i < 2 * n; ++i) batched_init |= c.batched(i);
  if (!batched_init) {
    std::vector<Tensor> operands;
    for (size_t i = 0; i < n; ++i) operands.push_back(c.bx(i));
    for (size_t i = n; i < 2 * n; ++i) operands.push_back(c.x(i));
    std::vector<Tensor> ys = c.again(operands, with_window(c.op, ir::kReduceWindow, w));
    for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
    return;
  }
  std::optional<ir::OpKind> k = body_combiner(c.op.region(0));
  if (n != 1 || !(k == ir::OpKind::Add || k == ir::OpKind::Maximum || k == ir::OpKind::Minimum))
    c.fail("a batched init value is batched only for one input and a body of add, maximum or minimum; this "
           "reduce_window has {} inputs and a body of {}", n, describe_body(c.op.region(0)));
  Tensor x = c.bx(0);
  if (k == ir::OpKind::Add) {
    Tensor zero = c.b.scalar(x.element(), 0);
    Tensor y = ir::reduce_window(x, zero, w, ir::OpKind::Add);
    Tensor real = ir::reduce_window(full_like(c.b, x.type(), 1), zero, w, ir::OpKind::Add);
    double positions = 1;
    for (int64_t s : w.size) positions *= static_cast<double>(s);
    c.set(0, y + (1.0 + positions - real) * ir::broadcast_in_dim(c.x(1), y.shape(), {0}));
    return;
  }
  bool largest = k == ir::OpKind::Maximum;
  Tensor y = ir::reduce_window(x, ir::extreme(x, largest), w, *k);
  Tensor init = ir::broadcast_in_dim(c.x(1), y.shape(), {0});
  c.set(0, largest ? ir::maximum(y, init) : ir::minimum(y, init));
}

// select_and_scatter(x, s, init)[b] = select_and_scatter(x[b], s[b], init), unit window in front;
// a batched init with an add scatter: select_and_scatter(x[b], s[b], 0) + init[b]
void vmap_SelectAndScatter(VmapContext& c) {
  ir::Window w = with_unit_front(window_of(c.op));
  ir::AttrMap a = with_window(c.op, ir::kSelectAndScatterWindow, w);
  if (!c.batched(2)) {
    c.set(0, c.again({c.bx(0), c.bx(1), c.x(2)}, a)[0]);
    return;
  }
  if (body_combiner(c.op.region(1)) != ir::OpKind::Add)
    c.fail("a batched init value is batched only with an add scatter region, not {}", describe_body(c.op.region(1)));
  Tensor y = c.again({c.bx(0), c.bx(1), c.b.scalar(c.x(2).element(), 0)}, a)[0];
  c.set(0, y + ir::broadcast_in_dim(c.x(2), y.shape(), {0}));
}

// sort(xs; d)[b] = sort(xs[b]; d + 1)
void vmap_Sort(VmapContext& c) {
  int64_t rank = c.op.operand(0)->type().rank();
  int64_t dim = c.op.attrs().get<int64_t>("dimension");
  if (dim < 0) dim += rank;
  ir::AttrMap a = c.op.attrs();
  a.set("dimension", dim + 1);
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.num_operands(); ++i) operands.push_back(c.bx(i));
  std::vector<Tensor> ys = c.again(operands, a);
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
}

}  // namespace tessera::autodiff
