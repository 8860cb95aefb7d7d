// The fused loops' kernels (fused_kernels.h) compiled for AVX-512 (avx512f/bw/vl, 16 floats per
// instruction): fusion.cpp's kernels() runs them where the CPU has all three, the AVX2 set or the
// baseline elsewhere. Every kernel computes each element with the same IEEE operation as the other
// sets; AVX-512F has FMA instructions, so this file is compiled with -ffp-contract=off
// (CMakeLists.txt) and no a * b + c can become one rounding. The equality with the baseline is
// tested per kernel (fused_kernels_test.cpp).
// GCC 12 warns of the undefined upper half that _mm512_cvtps_pd and _mm512_cvtpd_ps start from
// (a false positive inside its own avx512fintrin.h, GCC bug 105593).
#if !defined(__clang__)  // clang has no such warning (the fuzz build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define TESSERA_FUSED_AVX512
#define TESSERA_FUSED_ISA avx512
#include "exec/fused_kernels.h"

namespace tessera::exec::fused {

const KernelSet& avx512_kernels() { return avx512::kernel_set(); }

}  // namespace tessera::exec::fused
