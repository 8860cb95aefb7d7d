#!/usr/bin/env bash
# Builds parse_print_bench (Release, in build-bench) and runs it: 5 repetitions, aggregates only
# (mean, median, stddev, cv). Prints the machine (nproc, CPU model) first. Extra arguments go to
# the benchmark binary (e.g. --benchmark_filter=Parse). Figures go in docs/PERFORMANCE.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-bench}
jobs=${JOBS:-2}

source "$root/bench/machine.sh"

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$jobs" --target parse_print_bench

"$build/bin/parse_print_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true "$@"
