// The one place that chooses the GEMM library of the fast kernels. f32 products run on oneDNN's
// dnnl_sgemm when the build found libdnnl-dev (TESSERA_ONEDNN, on by default), otherwise on
// OpenBLAS; f64 products always run on OpenBLAS (oneDNN has no DGEMM).
//
// Why oneDNN: the environment forces OPENBLAS_CORETYPE=Haswell (an AVX2 kernel), which oneDNN
// ignores: it picks its kernel from the CPU (AVX-512 on these Zen 5 machines), about 1.8x
// OpenBLAS's rate over the CausalLM's contractions (docs/PERFORMANCE.md, "Contractions").
//
// Every call is single-threaded: both libraries can start threads of their own (OpenBLAS's pool,
// oneDNN's OpenMP team), which would be a second pool outside the thread budget (DESIGN.md §6).
// OpenBLAS is set to one thread once; oneDNN's OpenMP runtime reads the calling thread's own
// thread count, so each thread that calls sets it to 1 on its first call.
//
// Bits: a call's result depends only on its arguments (the same call gives the same bits), and
// beta 1 on a C of zeros gives the bits of beta 0 with both libraries. Neither library promises
// that a row or column piece of a product has the bits of the same rows or columns of the whole
// one (see contraction.cpp's split): callers compare only calls of the same shapes.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::exec {

enum class GemmLibrary { OpenBlas, OneDnn };

const char* library_name(GemmLibrary library);

// The library f32 GEMMs run on.
GemmLibrary sgemm_library();

// Every library this build can run an SGEMM on (for measurements and tests): OpenBLAS, and oneDNN
// when found.
std::vector<GemmLibrary> sgemm_libraries();

// C = A·B + beta·C in row-major order, op(A) M x K (stored K x M when ta), op(B) K x N (stored
// N x K when tb), on the calling thread alone. Sizes and leading dimensions fit in int (fits_blas).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc);

// The same f32 product on a given library (one of sgemm_libraries()).
void sgemm_on(GemmLibrary library, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace tessera::exec
