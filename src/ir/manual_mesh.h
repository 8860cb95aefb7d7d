// The mesh an sdy.manual_computation runs on: the first of its in and out layouts on a mesh with
// axes (a layout on a mesh without axes splits nothing and goes with any, as Shardy allows), else
// its first layout's; null when it has no layouts. One rule for the verifier, the interpreter's
// kernel and the partitioner.
#pragma once

#include "ir/module.h"

namespace tessera::ir {

const Mesh* manual_mesh(const Module& module, const Op& op);

}  // namespace tessera::ir
