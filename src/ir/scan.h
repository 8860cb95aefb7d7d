// chlo.scan: XLA's Scan. The body runs once per position along `dimension` of the inputs, in order
// (from the end when is_reverse), taking each input's slice at that position (the dimension
// removed) and the carries, and returning the output slices and the next carries. The results are
// the outputs, each the body's slices stacked along `dimension`, then the final carries:
//   chlo.scan(%in...) inits(%c...) dimension=d {^bb0(slices..., carries...): ... return outs..., carries...}
// Operands are the inputs then the inits, results the outputs then the carries; the two counts
// of each are MLIR's operandSegmentSizes and resultSegmentSizes (array<i32: a, b>). With no
// inputs, scan_dim_size gives the number of steps. The layout below is read once and shared by the
// shape rule, the verifier, the reference kernel and the printer.
#pragma once

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "ir/attribute.h"
#include "ir/builder.h"
#include "ir/type.h"

namespace tessera::ir {

struct ScanLayout {
  size_t inputs = 0, inits = 0, outputs = 0;
  int64_t dimension = 0;
  int64_t length = 0;  // the number of steps
  bool reverse = false;
};

// The layout of a scan with these attributes, operand types and result count, or why it is not
// one (each reason names its constraint the way the shape rule reports it).
std::variant<ScanLayout, std::string> scan_layout(const AttrMap& attrs, const std::vector<Type>& operands,
                                                  size_t results);

// `array<i32: a, b>` as MLIR prints segment sizes; nullopt when absent or not of that form.
std::optional<std::vector<int64_t>> segment_sizes(const AttrMap& attrs, const std::string& name);
Opaque segment_sizes_attr(const std::vector<int64_t>& sizes);

// t without dimension d, and t with a dimension of `size` inserted at d.
Type erase_dim(const Type& t, int64_t d);
Type insert_dim(const Type& t, int64_t d, int64_t size);

// chlo.scan of `inputs` along `dimension` with carries starting at `inits`; `body` gets the input
// slices then the carries and returns the output slices then the next carries. Returns the outputs
// then the final carries.
std::vector<Tensor> scan(Builder& b, const std::vector<Tensor>& inputs, const std::vector<Tensor>& inits,
                         int64_t dimension, bool reverse,
                         const std::function<std::vector<Tensor>(Builder&, const std::vector<Tensor>&)>& body);

}  // namespace tessera::ir
