// The GEMM library of the fast kernels, chosen once (gemm.h): oneDNN for f32 when built with it,
// OpenBLAS otherwise and for f64, every call on the calling thread alone.
#include "exec/gemm.h"

#include <cblas.h>

#if TESSERA_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>

// The OpenMP runtime oneDNN was built on (Debian's: GCC's libgomp, linked by exec/CMakeLists.txt
// by name): declared here rather than through <omp.h>, which a clang build would take from LLVM's
// runtime, a second runtime whose setting oneDNN would never read.
extern "C" void omp_set_num_threads(int threads);
#endif

#include "support/error.h"

namespace tessera::exec {

namespace {

// OpenBLAS's pool is process-wide: one thread for every call, set before the first.
void one_openblas_thread() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

void openblas_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                    int64_t ldb, float beta, float* c, int64_t ldc) {
  one_openblas_thread();
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              1.0f, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

#if TESSERA_HAVE_ONEDNN
// oneDNN's OpenMP runtime sizes a call's team from the calling thread's own setting (OpenMP keeps
// one per thread), so each calling thread sets it once: no call starts a team.
void onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float beta, float* c, int64_t ldc) {
  thread_local const bool one_thread = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)one_thread;
  dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  TESSERA_CHECK(s == dnnl_success, "dnnl_sgemm refused a planned {}x{}x{} GEMM (status {})", m, n, k, int(s));
}
#endif

}  // namespace

const char* library_name(GemmLibrary library) {
  return library == GemmLibrary::OneDnn ? "oneDNN" : "OpenBLAS";
}

GemmLibrary sgemm_library() {
#if TESSERA_HAVE_ONEDNN
  return GemmLibrary::OneDnn;
#else
  return GemmLibrary::OpenBlas;
#endif
}

bool onednn_has_avx512() {
#if TESSERA_HAVE_ONEDNN
  // An ISA that includes avx512_core's bits (the AMX and bf16 ones do; avx2_vnni does not).
  static const bool has = [] {
    int isa = static_cast<int>(dnnl_get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  }();
  return has;
#else
  return false;
#endif
}

GemmLibrary sgemm_library_rule(GemmLibrary base, bool onednn_avx512, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                               int64_t ldb) {
  if (base == GemmLibrary::OneDnn && !onednn_avx512 && !tb) {
    if (ta && m * n * k >= kOpenBlasTransposedAWork) return GemmLibrary::OpenBlas;
    if (!ta && ldb >= kOpenBlasWideB && ldb % kOpenBlasBStride == 0) return GemmLibrary::OpenBlas;
  }
  return base;
}

GemmLibrary sgemm_library(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t ldb) {
  return sgemm_library_rule(sgemm_library(), onednn_has_avx512(), ta, tb, m, n, k, ldb);
}

std::vector<GemmLibrary> sgemm_libraries() {
#if TESSERA_HAVE_ONEDNN
  return {GemmLibrary::OpenBlas, GemmLibrary::OneDnn};
#else
  return {GemmLibrary::OpenBlas};
#endif
}

void sgemm_on(GemmLibrary library, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#if TESSERA_HAVE_ONEDNN
  if (library == GemmLibrary::OneDnn) return onednn_sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
#else
  TESSERA_CHECK(library == GemmLibrary::OpenBlas, "this build has no oneDNN");
#endif
  openblas_sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc) {
  one_openblas_thread();
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              1.0, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace tessera::exec
