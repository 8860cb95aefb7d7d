// Literals as MLIR's dense elements attributes.
//
// `dense<v>` when every element has the same bits (a splat, which includes every one-element
// tensor), `dense<>` for an empty tensor, brackets nested by shape otherwise, and, as MLIR does for
// more than 100 elements that are not a splat, the raw data as one hex string
// (`dense<"0x0000803F...">`: little-endian storage, one byte for each sub-byte integer with the
// high bits clear, so i1 is 00 or 01 as MLIR stores it since it stopped packing bits; complex as
// real then imaginary). Elements print as true/false, integers in decimal (unsigned ones as
// unsigned), floats through print_float, complex as `(re,im)`.
#include <cstring>

#include "ir/literal.h"
#include "stablehlo/print_internal.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace print_impl {
namespace {

constexpr int64_t kHexThreshold = 100;

// The stored bytes of element i, or of part `part` (0 real, 1 imaginary) of a complex element.
uint64_t element_bits(const ir::Literal& l, int64_t i, int part = 0) {
  const ir::ElementInfo& info = ir::info(l.element());
  size_t width = static_cast<size_t>(ir::is_complex(l.element()) ? info.bytes / 2 : info.bytes);
  size_t offset = static_cast<size_t>(i * info.bytes) + static_cast<size_t>(part) * width;
  uint64_t bits = 0;
  std::memcpy(&bits, l.bytes().data() + offset, width);  // the host is little-endian
  return bits;
}

std::string element_text(const ir::Literal& l, int64_t i) {
  ir::ElementType t = l.element();
  switch (ir::info(t).kind) {
    case ir::ElementKind::Bool:
      return l.get_int(i) != 0 ? "true" : "false";
    case ir::ElementKind::Signed:
      return std::to_string(l.get_int(i));
    case ir::ElementKind::Unsigned:
      return std::to_string(l.get_uint(i));
    case ir::ElementKind::Float:
      return print_float(t, element_bits(l, i));
    case ir::ElementKind::Complex: {
      ir::ElementType part = ir::real_type(t);
      return "(" + print_float(part, element_bits(l, i, 0)) + "," +
             print_float(part, element_bits(l, i, 1)) + ")";
    }
  }
  return "";
}

// Elements in row-major order with a bracket level per dimension: [[1, 2], [3, 4]].
std::string nested(const ir::Literal& l) {
  const std::vector<int64_t>& shape = l.shape();
  std::vector<int64_t> counter(shape.size(), 0);
  std::string out;
  size_t open = 0;
  for (int64_t i = 0; i < l.num_elements(); ++i) {
    if (i != 0) out += ", ";
    for (; open < shape.size(); ++open) out += '[';
    out += element_text(l, i);
    // Advance the mixed-radix counter; each dimension that rolls over closes its bracket.
    ++counter.back();
    for (size_t d = shape.size() - 1; d > 0 && counter[d] >= shape[d]; --d) {
      counter[d] = 0;
      ++counter[d - 1];
      --open;
      out += ']';
    }
  }
  for (; open > 0; --open) out += ']';
  return out;
}

std::string hex_data(const ir::Literal& l) {
  const ir::ElementInfo& info = ir::info(l.element());
  uint8_t mask = info.bits < 8 ? static_cast<uint8_t>((1u << info.bits) - 1) : 0xFF;
  std::string out = "\"0x";
  for (std::byte b : l.bytes()) out += fmt::format("{:02X}", static_cast<uint8_t>(b) & mask);
  return out + "\"";
}

}  // namespace

std::string dense(const ir::Literal& l) {
  std::string body;
  if (l.is_splat())
    body = element_text(l, 0);
  else if (l.num_elements() > kHexThreshold)
    body = hex_data(l);
  else
    body = nested(l);
  return "dense<" + body + "> : " + ir::to_string(l.type());
}

}  // namespace print_impl

std::string print(const ir::Literal& literal) { return print_impl::dense(literal); }

}  // namespace tessera::stablehlo
