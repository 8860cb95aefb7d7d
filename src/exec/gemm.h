// The one place that chooses the GEMM library of the fast kernels. f32 products run on oneDNN's
// dnnl_sgemm when the build found libdnnl-dev (TESSERA_ONEDNN, on by default), otherwise on
// OpenBLAS; f64 products always run on OpenBLAS (oneDNN has no DGEMM).
//
// Why oneDNN: some of these machines force OPENBLAS_CORETYPE=Haswell (an AVX2 kernel), which oneDNN
// ignores: it picks its kernel from the CPU (AVX-512 on the Zen 4/5 and Xeon machines), about 1.06
// to 1.8x OpenBLAS's rate over the CausalLM's contractions (docs/PERFORMANCE.md, "Contractions").
// The exception: where oneDNN has only AVX2 kernels (Zen 3), its products of a transposed A with B
// as stored (every weight gradient, A^T·B over the tokens) ran at 40-86 GFLOP/s against
// OpenBLAS's 86-89 (the LM head's 256x4096x1024 at 40 against 88; all of 2^25 multiply-adds or
// more), so those of 2^23 or more run on OpenBLAS there. Smaller ones stay on oneDNN, faster there
// (attention's per head, up to 2^20: 79-87 against 71-72; the tiny model's weight gradients, up to
// 2^21: 86-90 against 75-86; docs/PERFORMANCE.md, "Session 22"). There too, oneDNN's products of
// A and B as stored slow down where B's rows lie 1024 or more floats apart (B a column piece of a
// wider matrix, as contraction.cpp cuts the LM head's [256, 4096] weight): `gemm_bench
// --sweep-ldb` measured 38-85 GFLOP/s in most rows at strides of 1024, 2048, 4096 and 8192 floats
// (multiples of 4 KiB), 65-98 at 2560, against 91-97 at 4112, while OpenBLAS held 78-97 at every
// stride: ahead, or behind by 2.5 % at most, at each stride that is a multiple of 2 KiB from 4 KiB
// up, and well behind at M = 64 at 768 and 4112. Inside the step it was worse: the head's forward
// at 512 tokens per device took 28 ms against 12.4 on OpenBLAS. So products whose B rows lie a
// multiple of 512 floats apart, 1024 or more, run on OpenBLAS there too (docs/PERFORMANCE.md,
// "Session 23"). The choice is a function of the call's form, size and layout and of the CPU
// alone, never of a timing: the same program gives the same bits on every run.
//
// Every call is single-threaded: both libraries can start threads of their own (OpenBLAS's pool,
// oneDNN's OpenMP team), which would be a second pool outside the thread budget (DESIGN.md §6).
// OpenBLAS is set to one thread once; oneDNN's OpenMP runtime reads the calling thread's own
// thread count, so each thread that calls sets it to 1 on its first call.
//
// Bits: a call's result depends only on its arguments (the same call gives the same bits), and
// beta 1 on a C of zeros gives the bits of beta 0 with both libraries. Neither library promises
// that a row or column piece of a product has the bits of the same rows or columns of the whole
// one (see contraction.cpp's split): callers compare only calls of the same shapes, and choose the
// library of a call's pieces from the whole call.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::exec {

enum class GemmLibrary { OpenBlas, OneDnn };

const char* library_name(GemmLibrary library);

// The library most f32 GEMMs run on: oneDNN when the build has it.
GemmLibrary sgemm_library();

// Whether oneDNN runs AVX-512 kernels on this CPU (false in a build without oneDNN).
bool onednn_has_avx512();

// Products of a transposed A with B as stored, of at least this many multiply-adds, run on
// OpenBLAS where oneDNN has no AVX-512 kernels (above).
// Between the sizes measured on either side (2^21 and 2^25).
constexpr int64_t kOpenBlasTransposedAWork = int64_t{1} << 23;

// Products of A and B as stored whose B rows lie a multiple of kOpenBlasBStride floats apart, and
// at least kOpenBlasWideB, run on OpenBLAS where oneDNN has no AVX-512 kernels (above).
constexpr int64_t kOpenBlasWideB = 1024;
constexpr int64_t kOpenBlasBStride = 512;

// The library the f32 product op(A) m x k times op(B) k x n, B's rows `ldb` elements apart, runs
// on, on this machine.
GemmLibrary sgemm_library(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t ldb);

// The rule behind it, for any CPU: `base` is the library most f32 products run on (sgemm_library()),
// `onednn_avx512` whether oneDNN has AVX-512 kernels there (so that tests check both branches on
// every machine).
GemmLibrary sgemm_library_rule(GemmLibrary base, bool onednn_avx512, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                               int64_t ldb);

// Every library this build can run an SGEMM on (for measurements and tests): OpenBLAS, and oneDNN
// when found.
std::vector<GemmLibrary> sgemm_libraries();

// C = A·B + beta·C in row-major order, op(A) M x K (stored K x M when ta), op(B) K x N (stored
// N x K when tb), on the calling thread alone, in f64 (on OpenBLAS). Sizes and leading dimensions
// fit in int (fits_blas).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc);

// The same product in f32 on a given library (one of sgemm_libraries()).
void sgemm_on(GemmLibrary library, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace tessera::exec
