// Small pieces of fused-loop programs (fusion_program.h) that need no Program: the row length of
// a row broadcast (fused::Instr::row_len), and a kernel run on the two values of a one-hot (an
// index test's values, fused::Instr::values). A view's strides are strided.h's view_strides.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "exec/dims.h"
#include "exec/fused_kernels.h"
#include "ir/module.h"

namespace tessera::exec::fusion_program {

// A one-hot's two values (at its index, elsewhere) as ops of scalars make them (Instr::values).
using Values = std::array<std::array<std::byte, 8>, 2>;

// The row length when strides read one element per row of the last dimension, the rows in
// row-major order (fused::Instr::row_len), else 0.
inline int64_t row_broadcast(std::span<const int64_t> shape, std::span<const int64_t> strides) {
  if (shape.empty() || strides.back() != 0 || shape.back() <= 0) return 0;
  int64_t expect = 1;
  for (size_t d = shape.size() - 1; d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expect) return 0;
    expect *= shape[d];
  }
  return shape.back();
}

// Runs kernel `fn` (of this machine's set) on two elements: the values a one-hot's two values
// become, with the very instructions the loop would run on every element.
inline void apply(fused::Kernel fn, const Values& x, const Values* y, ir::ElementType e, Values& out) {
  const size_t w = static_cast<size_t>(ir::info(e).bytes);
  alignas(16) std::byte a[16], b[16], z[16];
  for (size_t i = 0; i < 2; ++i) {
    std::memcpy(a + i * w, x[i].data(), w);
    if (y) std::memcpy(b + i * w, (*y)[i].data(), w);
  }
  fused::Instr s;
  s.in = {0, 1, -1, -1};
  s.out = 2;
  std::byte* regs[3] = {a, b, z};
  fn(s, regs, 0, 2);
  for (size_t i = 0; i < 2; ++i) std::memcpy(out[i].data(), z + i * w, w);
}

}  // namespace tessera::exec::fusion_program
