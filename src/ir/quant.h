// A !quant.uniform element type: integers in `storage` that stand for (q - zero_point) * scale in
// `expressed`, with one scale and zero point for the whole tensor or one per slice along `axis`.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/element_type.h"

namespace tessera::ir {

struct Quantization {
  ElementType storage = ElementType::i8;
  ElementType expressed = ElementType::f32;
  int64_t storage_min = 0, storage_max = 0;  // the storage type's range unless the text narrows it
  std::optional<int64_t> axis;               // per-axis quantization when set
  std::vector<double> scales;                // one, or dim(axis) of them
  std::vector<int64_t> zero_points;          // as many as scales
  bool operator==(const Quantization&) const = default;
};

}  // namespace tessera::ir
