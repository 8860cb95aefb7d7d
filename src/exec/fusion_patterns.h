// Small pieces of fused-loop programs (fusion_program.h) that need no Program: a view's
// strides, the row length of a row broadcast (fused::Instr::row_len), and a kernel run on the two
// values of a one-hot (an index test's values, fused::Instr::values).
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
#include "support/error.h"

namespace tessera::exec::fusion_program {

// The element offset and strides (along its result's dimensions; `strides`: that many zeros) at
// which view `op` (fusion_rules::is_view) reads its operand: a broadcast repeats elements (stride
// 0), a slice starts inside and steps over some, a reverse walks reversed dimensions backwards
// from their last index.
inline int64_t view_strides(const ir::Op& op, Dims& strides);

// A one-hot's two values (at its index, elsewhere) as ops of scalars make them (Instr::values).
using Values = std::array<std::array<std::byte, 8>, 2>;

// The strides through which broadcast `op` reads its operand, along its result's dimensions
// (`strides`: that many zeros).
inline void broadcast_strides(const ir::Op& op, Dims& strides) {
  const std::vector<int64_t>& shape = op.result(0)->type().shape;
  const std::vector<int64_t>& from = op.operand(0)->type().shape;
  const auto& dims = op.attrs().get<std::vector<int64_t>>("broadcast_dimensions");
  RowMajor xs(from);
  for (size_t k = 0; k < dims.size(); ++k)
    if (from[k] == shape[static_cast<size_t>(dims[k])]) strides[static_cast<size_t>(dims[k])] = xs[k];
}

inline int64_t view_strides(const ir::Op& op, Dims& strides) {
  const std::vector<int64_t>& from = op.operand(0)->type().shape;
  RowMajor xs(from);
  int64_t offset = 0;
  switch (op.kind()) {
    case ir::OpKind::BroadcastInDim: broadcast_strides(op, strides); break;
    case ir::OpKind::Slice: {
      const auto& start = op.attrs().get<std::vector<int64_t>>("start_indices");
      const auto& step = op.attrs().get<std::vector<int64_t>>("strides");
      for (size_t d = 0; d < from.size(); ++d) {
        strides[d] = xs[d] * (step.empty() ? 1 : step[d]);
        offset += xs[d] * start[d];
      }
      break;
    }
    case ir::OpKind::Reverse: {
      const auto& dims = op.attrs().get<std::vector<int64_t>>("dimensions");
      for (size_t d = 0; d < from.size(); ++d) strides[d] = xs[d];
      for (int64_t d : dims) {  // unique (the shape rule checks)
        auto u = static_cast<size_t>(d);
        offset += (from[u] - 1) * xs[u];
        strides[u] = -xs[u];
      }
      break;
    }
    default: TESSERA_CHECK(false, "view_strides of {}", op.name());
  }
  return offset;
}

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
