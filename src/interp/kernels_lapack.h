// LAPACK custom calls of JAX's CPU lowering (kernels_lapack.cpp: potrf, getrf, trsm; through
// kernels_lapack_solvers.cpp: geqrf, orgqr, syevd, gesdd, gesvd, geev; kernels_lapack_reductions.cpp:
// gees, gehrd, sytrd, geqp3, gtsv).
#pragma once

#include <optional>
#include <string>

#include "interp/kernels.h"

namespace tessera::interp {

// The results of custom_call @`target` when it is a LAPACK routine the interpreter runs
// (lapack_{s,d,c,z}<routine>[_ffi], blas_?trsm); nullopt for any other target.
std::optional<Results> eval_lapack(const EvalContext& ctx, const std::string& target);

}  // namespace tessera::interp
