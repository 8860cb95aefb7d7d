// NumPy arrays and Literals, both ways, for the Python package (tools/python/README.md).
//
// In: anything np.asarray takes (arrays, lists, scalars), converted to the element type the
// parameter has (`expected`) when NumPy has that type, so a Python float list feeds an f32
// parameter; a C-contiguous array of the right type is read in place (a Literal view), not copied.
// Types NumPy lacks (bf16, the f8 kinds) are given as float arrays and rounded to nearest even, as
// a cast in the program would; sub-byte integers as int8/uint8 arrays, taken modulo their width.
// Out: a Literal becomes an array that owns it (no copy of the bytes); bf16 and the f8 kinds come
// back widened to float32 (exactly: every value of theirs is an f32), sub-byte integers as int8/uint8.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>

#include "ir/literal.h"

namespace tessera::python {

namespace py = pybind11;

// The NumPy dtype an element type is stored as here (f32 for bf16 and the f8 kinds).
py::dtype dtype_of(ir::ElementType e);

// An input for a parameter of type `expected` (none: the array's own type). `keep` receives the
// array the Literal may view; it must outlive the Literal's use. `what` names the input in errors.
ir::Literal to_literal(py::handle value, const std::optional<ir::Type>& expected, py::object& keep,
                       const std::string& what);

py::array to_numpy(ir::Literal literal);

}  // namespace tessera::python
