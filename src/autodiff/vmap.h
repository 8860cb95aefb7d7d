// Vectorizing map of whole programs: f -> f_vmap, which computes f on a batch of examples at once.
//
// f_vmap takes f's parameters, each batched parameter with one more dimension of the batch size
// at its in_axes position (unbatched parameters, in_axes = nullopt, are shared by every example),
// and returns f's results with the batch dimension at their out_axes position. Per-example
// computations become batched ones: elementwise ops broadcast what is shared, dot_general gains
// a batch dimension, gather and scatter gain operand batching dimensions, reduce reduces one
// dimension further in, while loops run until every example's loop is done, and collectives move
// the batch along as one more dimension of the operand. Ops that see no batched value are copied
// as they are. Parameter and result shardings keep their axes, the batch dimension inserted as a
// replicated one ({}), so meshes and layouts survive the transform. What cannot be batched
// (custom_call, interpreter harness ops) is refused with a user error that names the op.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/module.h"

namespace tessera::autodiff {

struct VmapOptions {
  // Per parameter of f: the dimension of the batched parameter that indexes the examples
  // (negative counts from the end, -1 being the last dimension of the batched parameter), or
  // nullopt for a parameter every example shares. Empty: every parameter batched at 0.
  std::vector<std::optional<int64_t>> in_axes;
  // Per result of f: where the batch dimension goes (negative counts from the end), or nullopt
  // for a result that does not depend on the batch (refused when it does). Empty: all at 0.
  std::vector<std::optional<int64_t>> out_axes;
  // The batch size. 0: read from `in_types`.
  int64_t batch_size = 0;
  // Optional: the batched parameters' types (f's types with the batch dimension inserted at
  // in_axes); the batch size is read from them and must agree between them and with batch_size.
  std::vector<ir::Type> in_types;
  std::string name;  // empty: f's name + "_vmap"
};

// Builds the batched function of `f` in `module` (where f lives) and returns it. User errors: no
// batched parameter, disagreeing batch sizes, axes out of range, an op that cannot be batched
// (named). No half-built function stays behind.
ir::Function& vmap(ir::Module& module, const ir::Function& f, const VmapOptions& options);

}  // namespace tessera::autodiff
