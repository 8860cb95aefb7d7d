#!/usr/bin/env bash
# SGEMM GFLOP/s per shape class of the CausalLM training step (tiny and larger configurations of
# bench/train_vs_torch.sh), OpenBLAS, BLIS and oneDNN single-threaded side by side in one run
# (bench/gemm_bench.cpp). BLIS and oneDNN are Debian's libblis-dev and libdnnl-dev; a library that
# is not installed shows as missing. Builds gemm_bench (Release, build-bench; BUILD= to change).
# Arguments go to gemm_bench (--reps N, --min-ms T, --config tiny|larger, --batch B, --sweep-ldb). The environment's
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are left as they are (UNSET_OPENBLAS=1 unsets both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-bench}
if [ "${UNSET_OPENBLAS:-0}" = 1 ]; then unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; fi
source "$root/bench/machine.sh"
echo "OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-<unset>}"
echo "cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|fma|avx512f|avx512bw|avx512vl|avx512_bf16|amx_tile)$' | tr '\n' ' ')"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target gemm_bench >/dev/null
"$build/bin/gemm_bench" "$@"
