// Model FLOPs utilization's two halves: the FLOPs of a program's contractions, counted from its
// dot_generals, and the rate this machine's GEMM library reaches on a plain SGEMM, measured now. `tessera
// train` prints their ratio per step (achieved FLOP/s over the peak of the cores it runs on).
#pragma once

#include <cstdint>

#include "exec/gemm.h"
#include "ir/module.h"

namespace tessera::exec {

// 2 x (result elements) x (contracting elements) summed over every dot_general of `fn`, those in
// nested regions counted once each (a while body's contractions once, whatever its trip count) and
// those of the functions it calls (func.call, resolved in `module`) once per call.
double dot_flops(const ir::Module& module, const ir::Function& fn);

// Single-threaded SGEMM GFLOP/s of `library` (by default the one the kernels use, gemm.h): the
// median of `reps` timings of an n x n x n product (each timing repeats it until about
// `min_seconds` have passed).
double measure_sgemm_gflops(int64_t n = 384, int reps = 5, double min_seconds = 0.02,
                            GemmLibrary library = sgemm_library());

}  // namespace tessera::exec
