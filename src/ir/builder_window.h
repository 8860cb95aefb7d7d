// Builder functions of the window ops and sort (defined at the end of builder_structure.cpp, which
// holds the region helpers they share with reduce and scatter). Kept out of builder.h so the
// layers that do not build these ops do not depend on them.
#pragma once

#include "ir/builder.h"
#include "ir/window.h"

namespace tessera::ir {

// stablehlo.convolution; `window.size` is ignored (the kernel's spatial sizes are the window).
Tensor convolution(const Tensor& lhs, const Tensor& rhs, const ConvDims& dims, const Window& window,
                   int64_t feature_group_count = 1, int64_t batch_group_count = 1);
// stablehlo.reduce_window with a body applying `combiner` (add, maximum, minimum, ...).
Tensor reduce_window(const Tensor& x, const Tensor& init, const Window& window, OpKind combiner);
// stablehlo.select_and_scatter: in each window select by `compare(a, b, select)` (GE: the first
// largest), and combine the source values scattered to one position with `scatter`.
Tensor select_and_scatter(const Tensor& operand, const Tensor& source, const Tensor& init,
                          const Window& window, ComparisonDirection select, OpKind scatter);
// stablehlo.sort of xs along `dimension`, ordered by compare(xs[0] lhs, xs[0] rhs, direction).
std::vector<Tensor> sort(const std::vector<Tensor>& xs, int64_t dimension, ComparisonDirection direction,
                         bool is_stable = true);
// The identity of maximum (lowest = true) or minimum for x's element type, as a scalar constant.
Tensor extreme(const Tensor& x, bool lowest);

}  // namespace tessera::ir
