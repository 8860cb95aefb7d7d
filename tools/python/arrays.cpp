// NumPy <-> Literal (arrays.h).
#include "tools/python/arrays.h"

#include <fmt/format.h>

#include <cstring>

#include "support/error.h"

namespace tessera::python {

using ir::ElementType;

namespace {

// The element type a NumPy dtype stores, if it is one of Tessera's.
std::optional<ElementType> element_of(const py::dtype& dt) {
  char kind = dt.kind();
  auto size = static_cast<int>(dt.itemsize());
  switch (kind) {
    case 'b': return ElementType::i1;
    case 'i': return size == 1 ? ElementType::i8 : size == 2 ? ElementType::i16 : size == 4 ? ElementType::i32 : ElementType::i64;
    case 'u': return size == 1 ? ElementType::ui8 : size == 2 ? ElementType::ui16 : size == 4 ? ElementType::ui32 : ElementType::ui64;
    case 'f':
      if (size == 2) return ElementType::f16;
      if (size == 4) return ElementType::f32;
      if (size == 8) return ElementType::f64;
      return std::nullopt;
    case 'c':
      if (size == 8) return ElementType::c64;
      if (size == 16) return ElementType::c128;
      return std::nullopt;
    default: return std::nullopt;
  }
}

// Whether NumPy stores `e` as itself (not widened).
bool numpy_has(ElementType e) {
  switch (e) {
    case ElementType::bf16: case ElementType::f8E4M3: case ElementType::f8E3M4: case ElementType::f8E4M3FN:
    case ElementType::f8E5M2: case ElementType::i2: case ElementType::i4: case ElementType::ui2: case ElementType::ui4:
      return false;
    default: return true;
  }
}

}  // namespace

py::dtype dtype_of(ElementType e) {
  switch (e) {
    case ElementType::i1: return py::dtype("bool");
    case ElementType::i2: case ElementType::i4: case ElementType::i8: return py::dtype("int8");
    case ElementType::i16: return py::dtype("int16");
    case ElementType::i32: return py::dtype("int32");
    case ElementType::i64: return py::dtype("int64");
    case ElementType::ui2: case ElementType::ui4: case ElementType::ui8: return py::dtype("uint8");
    case ElementType::ui16: return py::dtype("uint16");
    case ElementType::ui32: return py::dtype("uint32");
    case ElementType::ui64: return py::dtype("uint64");
    case ElementType::f16: return py::dtype("float16");
    case ElementType::f64: return py::dtype("float64");
    case ElementType::c64: return py::dtype("complex64");
    case ElementType::c128: return py::dtype("complex128");
    default: return py::dtype("float32");  // f32, and bf16 and the f8 kinds widened
  }
}

ir::Literal to_literal(py::handle value, const std::optional<ir::Type>& expected, py::object& keep,
                       const std::string& what) {
  py::module_ np = py::module_::import("numpy");
  py::array a;
  try {
    a = expected ? np.attr("ascontiguousarray")(value, dtype_of(expected->element))
                 : np.attr("ascontiguousarray")(value);
  } catch (py::error_already_set& e) {
    support::fail("{}: cannot be made a NumPy array{}: {}", what,
                  expected ? fmt::format(" of {}", ir::spelling(expected->element)) : "", e.what());
  }
  std::optional<ElementType> stored = element_of(a.dtype());
  if (!stored) support::fail("{}: NumPy dtype {} has no Tessera element type", what, std::string(py::str(a.dtype())));
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  ElementType e = expected ? expected->element : *stored;
  ir::Type type(e, shape);
  if (numpy_has(e)) {
    keep = a;  // read in place: the caller keeps the array alive while the Literal is used
    return ir::Literal::view(type, static_cast<std::byte*>(a.mutable_data()));
  }
  // Rounded (floats) or wrapped (sub-byte integers) element by element, as a convert would.
  ir::Literal out(type);
  if (ir::is_float(e)) {
    const float* src = static_cast<const float*>(a.data());
    for (int64_t i = 0; i < out.num_elements(); ++i) out.set_double(i, src[i]);
  } else {
    for (int64_t i = 0; i < out.num_elements(); ++i)
      out.set_int(i, ir::is_signed_integer(e) ? static_cast<const int8_t*>(a.data())[i] : static_cast<const uint8_t*>(a.data())[i]);
  }
  return out;
}

py::array to_numpy(ir::Literal literal) {
  ElementType e = literal.element();
  std::vector<py::ssize_t> shape(literal.shape().begin(), literal.shape().end());
  if (!numpy_has(e)) {
    py::array out(dtype_of(e), shape);
    if (ir::is_float(e)) {
      auto* dst = static_cast<float*>(out.mutable_data());
      for (int64_t i = 0; i < literal.num_elements(); ++i) dst[i] = static_cast<float>(literal.get_double(i));
    } else {
      for (int64_t i = 0; i < literal.num_elements(); ++i) {
        if (ir::is_signed_integer(e))
          static_cast<int8_t*>(out.mutable_data())[i] = static_cast<int8_t>(literal.get_int(i));
        else
          static_cast<uint8_t*>(out.mutable_data())[i] = static_cast<uint8_t>(literal.get_int(i));
      }
    }
    return out;
  }
  // The array owns the Literal: its bytes are the array's, never copied. A view is copied first,
  // since the storage it points into belongs to someone else.
  auto* owned = new ir::Literal(literal.is_view() ? ir::Literal(literal) : std::move(literal));
  py::capsule base(owned, [](void* p) { delete static_cast<ir::Literal*>(p); });
  return py::array(dtype_of(e), shape, static_cast<void*>(owned->bytes().data()), base);
}

}  // namespace tessera::python
