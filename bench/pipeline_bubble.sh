#!/usr/bin/env bash
# The measured pipeline bubble against the simulator fed with the measured fragment times
# (issue #8; docs/PERFORMANCE.md "Pipeline bubble: measured against the simulator").
#
# Builds `tessera` (Release, in $BUILD, default build-bench) and trains a byte-level CausalLM large
# enough that a fragment's compute (tens of ms) dwarfs a stage-to-stage hand-off (tens of µs) under
# 1F1B, 8 microbatches, on 2 and on 4 one-device pipeline stages of host devices. Each run prints
# the measured bubble (the share of stages x makespan not spent in F/B, mean over steps 2..N: step 1
# compiles and warms up), the simulator's bubble for the same schedule replayed with each stage's
# median F and B times, and their ratio. Only the cores differ between the two: with P = 2 each
# stage thread has a core of its own (on a 2-core machine); with P = 4 two stage threads share a
# core, so a fragment runs slower while all four stages compute than while some wait — the median
# times the simulator is fed are the crowded ones, and the fill and drain it simulates take longer
# than they did. Extra arguments go to every `tessera train` (e.g. --steps 12).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-bench}
source "$root/bench/machine.sh"
if [[ -z "${TESSERA:-}" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "${JOBS:-2}" --target tessera
  TESSERA=$build/bin/tessera
fi
corpus=$(mktemp)
trap 'rm -f "$corpus"' EXIT
for i in $(seq 2000); do echo "the quick brown fox jumps over the lazy dog, again and again. $i"; done >"$corpus"
model=(--batch 16 --seq 64 --d-model 256 --layers 8 --heads 8 --kv-heads 4 --ffn 688 --lr 1e-3)
for p in 2 4; do
  echo "== tessera train --plan pp=$p --schedule 1f1b --microbatches 8 --steps 8 ${model[*]} $*"
  "$TESSERA" train --plan "pp=$p" --schedule 1f1b --microbatches 8 --steps 8 "${model[@]}" --corpus "$corpus" \
    --no-progress-bar --sample 0 --schedule-svg "${SVG_DIR:-/tmp}/pipeline_bubble_pp$p.svg" "$@" |
    grep -E "^(pipeline bubble|  simulator fed|  median|  stage threads|per stage|  +[0-9]+  )|tok/s"
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
