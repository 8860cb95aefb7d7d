// The fused loops' kernels (fused_kernels.h) compiled for AVX2 (fusion.cpp's kernels() runs them
// where the CPU has it: every machine of DESIGN.md §6 does). The header's own includes come before
// its `#pragma GCC target`, so only its kernels take AVX2.
#define TESSERA_FUSED_AVX2
#define TESSERA_FUSED_ISA avx2
#include "exec/fused_kernels.h"

namespace tessera::exec::fused {

const KernelSet& avx2_kernels() { return avx2::kernel_set(); }

}  // namespace tessera::exec::fused
