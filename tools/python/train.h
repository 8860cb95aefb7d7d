// tessera.train(...): `tessera train` from Python, with the CLI's options as keyword arguments and
// a per-step callback (tools/python/README.md).
#pragma once

#include <pybind11/pybind11.h>

namespace tessera::python {

void bind_train(pybind11::module_& m);

}  // namespace tessera::python
