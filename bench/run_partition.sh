#!/usr/bin/env bash
# Builds partition_bench (Release, in build-bench) and runs it: 5 repetitions, aggregates only.
# Prints the machine first. Figures go in docs/PERFORMANCE.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-bench}
source "$root/bench/machine.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target partition_bench
"$build/bin/partition_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true "$@"
