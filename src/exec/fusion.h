// Element-wise fusion for the interpreter (see fusion.cpp): the planner that interp::run_block
// uses, when Options.accelerate is set, to compute chains of element-wise ops in one loop.
// accelerate.cpp registers it at start-up; interp::set_fusion_planner(nullptr) turns it off.
#pragma once

#include <cstdint>
#include <memory>

#include "interp/interpreter.h"

namespace tessera::exec {

std::unique_ptr<interp::FusionPlan> plan_fusion(const ir::Block& block);

// Values with fewer elements are never computed inside their readers' loops (default 16384: below
// it a fused loop's setup costs more than the passes it saves). Tests set 0 to fuse small shapes.
void set_fusion_min_elements(int64_t n);

}  // namespace tessera::exec
