// chlo.ragged_dot: a dot_general in which one lhs dimension is split into consecutive groups whose
// sizes are an operand (group_sizes). Its three modes, by the kind of the ragged dimension:
//   non-contracting (m): [b,m,k] x [g,b,k,n] -> [b,m,n]: rows of group i use rhs[i]; rows past the
//                        last group are zero;
//   contracting (k):     [b,m,k] x [b,k,n]   -> [g,b,m,n]: result[i] contracts only group i's k;
//   batch (b):           [b,m,k] x [b,k,n]   -> [b,m,n]: batches past the last group are zero.
// group_sizes is [g], or [prefix..., g] where the prefix is the lhs batch dimensions (in batch mode,
// those before the ragged one) and, in the non-contracting and contracting modes, the lhs
// non-contracting or contracting dimensions before the ragged one. Group i covers positions
// [s, s + size_i) of the ragged dimension, s the sum of the sizes before it (a negative size
// covers nothing). The layout below is computed once and shared by the shape rule, the reference
// kernel, the gradient and the factor rule.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "ir/attribute.h"
#include "ir/builder.h"
#include "ir/type.h"

namespace tessera::ir {

struct RaggedDotLayout {
  enum class Mode { kNonContracting, kContracting, kBatch };
  Mode mode = Mode::kNonContracting;
  int64_t ragged = 0;                         // the lhs ragged dimension
  int64_t groups = 0;                         // g
  std::vector<int64_t> prefix;                // lhs dimensions indexing group_sizes before g
  bool broadcast = false;                     // group_sizes is [g], the same for every prefix
  std::vector<int64_t> lhs_free, rhs_free;    // in result order (rhs_free without the group dimension)
  std::vector<int64_t> shape;                 // the result's
};

// The layout of a ragged_dot of these operand types, or the first constraint they break.
std::variant<RaggedDotLayout, std::string> ragged_dot_layout(const Type& lhs, const Type& rhs, const Type& group_sizes,
                                                             const RaggedDotDims& dims);

// Emits chlo.ragged_dot (its result type from the layout; a broken constraint is a UserError).
Tensor ragged_dot(const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes, const RaggedDotDims& dims);

}  // namespace tessera::ir
