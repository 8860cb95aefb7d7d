// Window geometry shared by convolution, reduce_window and select_and_scatter: the attributes as
// the spec names them read into one struct (absent ones take their defaults: strides and
// dilations 1, padding 0, no reversal), and the spec's num_windows. Shape rules check sizes and
// signs with the op's own constraint numbers; kernels, gradients and factor rules read the
// same struct, so every layer agrees on where a window lies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/attribute.h"

namespace tessera::ir {

struct Window {
  std::vector<int64_t> size;             // window_dimensions (convolution: the kernel's spatial sizes)
  std::vector<int64_t> stride;           // window_strides
  std::vector<int64_t> base_dilation;    // base_dilations / lhs_dilation
  std::vector<int64_t> window_dilation;  // window_dilations / rhs_dilation
  std::vector<int64_t> pad_lo, pad_hi;   // padding[:, 0], padding[:, 1]
  std::vector<bool> reversal;            // window_reversal (convolution only)

  size_t rank() const { return size.size(); }
  // The spec's num_windows along dimension d of an input of `input` elements there.
  int64_t num_windows(size_t d, int64_t input) const;
  // Whether every stride, dilation and size is 1 and nothing is padded or reversed along d.
  bool trivial(size_t d) const;
};

// The attribute names each op uses for the window's parts.
struct WindowNames {
  const char* size;  // null: sizes given by the caller
  const char* stride;
  const char* base_dilation;    // null: always 1
  const char* window_dilation;  // null: always 1
  const char* padding;
  const char* reversal;  // null: none
};
inline constexpr WindowNames kConvolutionWindow{nullptr, "window_strides", "lhs_dilation",
                                                 "rhs_dilation", "padding", "window_reversal"};
inline constexpr WindowNames kReduceWindow{"window_dimensions", "window_strides", "base_dilations",
                                           "window_dilations", "padding", nullptr};
inline constexpr WindowNames kSelectAndScatterWindow{"window_dimensions", "window_strides", nullptr,
                                                     nullptr, "padding", nullptr};

// The window of an op of `rank` window dimensions; `sizes` fills `size` when names.size is null.
// Lists of another length are read as they are (the shape rules reject them); a padding that is
// neither a 2-D integer literal nor an IntMatrix reads as absent.
Window read_window(const AttrMap& attrs, const WindowNames& names, size_t rank,
                   std::vector<int64_t> sizes = {});
// The window written back as attributes (defaults left out, as JAX prints them).
void write_window(AttrMap& attrs, const WindowNames& names, const Window& w);

// The padding attribute's shape as [rows, cols], or empty when it is absent or not 2-D integers.
std::vector<int64_t> padding_shape(const AttrMap& attrs, const char* name);
// `array<i1: true, false>` (kept as Opaque text by the parser) as bools; empty when absent.
// Returns false in `ok` when the text is not such an array.
std::vector<bool> bool_array(const AttrMap& attrs, const char* name, bool& ok);

}  // namespace tessera::ir
