// Reference kernel of chlo.ragged_dot (modes and group_sizes: ir/ragged_dot.h): each result
// element is a dot_general's sum over the contracting dimensions, restricted by the groups. Floats
// accumulate in double and round once; integers wrap in 64 bits, then to the result's width.
// Group i covers [s, s + size_i) of the ragged dimension, s the sum of the earlier sizes, each size
// clamped to [0, the dimension's extent]; positions past the last group give zero (non-contracting
// and batch modes) or take part in no group (contracting mode).
#include <algorithm>

#include "interp/kernels.h"
#include "ir/ragged_dot.h"

namespace tessera::interp {

using ir::Literal;
using Mode = ir::RaggedDotLayout::Mode;

Results eval_RaggedDot(const EvalContext& ctx) {
  const Literal& lhs = ctx.operand(0);
  const Literal& rhs = ctx.operand(1);
  const Literal& sizes = ctx.operand(2);
  const auto& dims = ctx.op.attrs().get<ir::RaggedDotDims>("ragged_dot_dimension_numbers");
  auto checked = ir::ragged_dot_layout(lhs.type(), rhs.type(), sizes.type(), dims);
  if (const auto* why = std::get_if<std::string>(&checked)) ctx.fail("{}", *why);
  const auto& l = std::get<ir::RaggedDotLayout>(checked);
  if (ir::is_complex(lhs.element())) ctx.fail("complex operands are not supported");
  const ir::DotDims& d = dims.dot;
  bool real = ir::is_float(lhs.element());
  Literal out(ctx.result_type());
  std::vector<int64_t> ls = lhs.strides(), rs = rhs.strides(), ss = sizes.strides();
  std::vector<int64_t> contracted;
  for (int64_t c : d.lhs_contracting) contracted.push_back(lhs.shape()[static_cast<size_t>(c)]);
  std::vector<int64_t> li(lhs.shape().size()), ri(rhs.shape().size());
  const int64_t extent = lhs.shape()[static_cast<size_t>(l.ragged)];
  // Group g's range of the ragged dimension, in the group_sizes row the lhs index `li` selects.
  auto range = [&](int64_t g) {
    int64_t row = 0;
    if (!l.broadcast)
      for (size_t k = 0; k < l.prefix.size(); ++k) row += li[static_cast<size_t>(l.prefix[k])] * ss[k];
    // Sizes past the ragged dimension's extent change nothing, and clamping them keeps the sums
    // from overflowing.
    auto size = [&](int64_t i) { return std::clamp<int64_t>(index_value(sizes, row + i * ss.back()), 0, extent); };
    int64_t start = 0;
    for (int64_t i = 0; i < g; ++i) start += size(i);
    return std::pair{start, start + size(g)};
  };
  auto group_of = [&](int64_t position) -> int64_t {
    for (int64_t g = 0; g < l.groups; ++g) {
      auto [start, end] = range(g);
      if (position >= start && position < end) return g;
    }
    return -1;
  };
  int64_t flat = 0;
  for_each_index(out.shape(), [&](const std::vector<int64_t>& o) {
    size_t p = 0;
    int64_t group = l.mode == Mode::kContracting ? o[p++] : -1;
    for (size_t k = 0; k < d.lhs_batch.size(); ++k, ++p) {
      li[static_cast<size_t>(d.lhs_batch[k])] = o[p];
      ri[static_cast<size_t>(d.rhs_batch[k])] = o[p];
    }
    for (int64_t x : l.lhs_free) li[static_cast<size_t>(x)] = o[p++];
    for (int64_t x : l.rhs_free) ri[static_cast<size_t>(x)] = o[p++];
    bool inside = true;
    if (l.mode != Mode::kContracting) {
      group = group_of(li[static_cast<size_t>(l.ragged)]);
      inside = group >= 0;
      if (inside && l.mode == Mode::kNonContracting) ri[static_cast<size_t>(dims.rhs_group[0])] = group;
    }
    double sum = 0;
    uint64_t isum = 0;  // wraps as two's complement
    if (inside)
      for_each_index(contracted, [&](const std::vector<int64_t>& c) {
        for (size_t k = 0; k < c.size(); ++k) {
          li[static_cast<size_t>(d.lhs_contracting[k])] = c[k];
          ri[static_cast<size_t>(d.rhs_contracting[k])] = c[k];
        }
        if (l.mode == Mode::kContracting) {
          auto [start, end] = range(group);
          int64_t at = li[static_cast<size_t>(l.ragged)];
          if (at < start || at >= end) return;
        }
        int64_t a = flat_index(li, ls), b = flat_index(ri, rs);
        if (real) sum += lhs.get_double(a) * rhs.get_double(b);
        else isum += static_cast<uint64_t>(lhs.get_int(a)) * static_cast<uint64_t>(rhs.get_int(b));
      });
    if (real) out.set_double(flat, sum);
    else out.set_int(flat, static_cast<int64_t>(isum));
    ++flat;
  });
  return one(std::move(out));
}

}  // namespace tessera::interp
