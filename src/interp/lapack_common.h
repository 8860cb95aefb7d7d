// What the LAPACK custom-call kernels share (kernels_lapack.cpp: potrf, getrf, trsm in the
// interpreter's own arithmetic; kernels_lapack_solvers.cpp: QR, eigh, SVD and eig through the
// LAPACK that OpenBLAS carries): reading the routine's name, its matrix operands' shape and
// layout, its backend_config attributes, and packaging its results as the op declares them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "interp/kernels.h"

namespace tessera::interp::lapack {

// The matrices of an operand: its last two dimensions, batched over the leading ones.
struct Matrices {
  int64_t batch = 1, rows = 0, cols = 0;
};
Matrices shape_of(const EvalContext& ctx, const ir::Literal& a);

// Whether the matrix operand `index` has a row-major layout in `operand_layouts` (LAPACK's
// transpose of the logical matrix; JAX passes column-major ones).
bool row_major(const EvalContext& ctx, size_t index);

// Whether `target` is lapack_<s|d|c|z><routine>[_ffi]; `ffi` says whether the suffix is there.
bool is_routine(const std::string& target, const char* routine, bool& ffi);

// Checks the element type letter of the routine (s, d, c, z) against the matrix's.
void check_type(const EvalContext& ctx, const std::string& target, char t, const ir::Literal& a);

// An integer entry `key = <int>` of the call's `mhlo.backend_config` dictionary (the _ffi
// routines' attributes: uplo, mode, compute_left, ...), or nullopt when it is not there.
std::optional<int64_t> config_int(const EvalContext& ctx, const std::string& key);

// `v` with the shape `t` declares when only the shapes differ (an info of one matrix declared as
// tensor<1xi32> rather than tensor<i32>).
ir::Literal as_declared(ir::Literal v, const ir::Type& t);

// A tuple result (api_version 2) or the results one by one (_ffi), as the op declares.
Results package(const EvalContext& ctx, std::vector<ir::Literal> values);

// The routines of kernels_lapack_solvers.cpp: geqrf, orgqr/ungqr, syevd/heevd, gesdd, gesvd,
// geev; nullopt for any other target.
std::optional<Results> eval_solvers(const EvalContext& ctx, const std::string& target);

// The routines of kernels_lapack_reductions.cpp: gees (Schur), gehrd (Hessenberg), sytrd/hetrd
// (tridiagonal), geqp3 (pivoted QR), gtsv (tridiagonal solve); nullopt for any other target.
std::optional<Results> eval_reductions(const EvalContext& ctx, const std::string& target);

}  // namespace tessera::interp::lapack
