#!/usr/bin/env bash
# Two builds of train_step_bench (before and after a change) and PyTorch eager, run alternately in
# one script, REPS times, on the two configurations of bench/train_vs_torch.sh: the medians of the
# repetitions per row, and the after/before and after/PyTorch ratios from the same run (a busy
# machine moves every row between repetitions; alternating spreads that over both builds).
#
# Usage: bench/train_before_after.sh BEFORE_BINARY AFTER_BINARY [REPS (default 3)]
# Builds nothing: pass two train_step_bench binaries of the same build type. The after binary's
# contraction GFLOP/s against the best single-core SGEMM of its libraries, and its median step
# wall and CPU times (its stderr), follow the table, one line per repetition and row. The environment's
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are left as they are (UNSET_OPENBLAS=1 unsets both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
before=$1 after=$2 reps=${3:-3}
if [ "${UNSET_OPENBLAS:-0}" = 1 ]; then unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; fi
source "$root/bench/machine.sh"
python=${PYTHON:-/usr/bin/python3}
#        name   vocab d_model layers heads kv ffn batch seq steps  (as bench/train_vs_torch.sh)
configs=("tiny   256   64      2      8     4  172 8     16  30"
         "larger 4096  256     4      8     4  684 8     128 10")
results=$(mktemp)
rates=$(mktemp)
for ((r = 1; r <= reps; ++r)); do
  for c in "${configs[@]}"; do
    set -- $c
    # One line per row: who config devices threads tokens/s (PyTorch: devices 1).
    "$before" "$@" 2>/dev/null | awk '{print "before", $2, $3, $5, $4}' >> "$results"
    "$after" "$@" 2> >(grep -E "SGEMM|median step" >> "$rates") | awk '{print "after", $2, $3, $5, $4}' >> "$results"
    "$python" "$root/bench/train_vs_torch.py" "$@" | awk '{print "torch", $2, 1, $3, $4}' >> "$results"
  done
  echo "repetition $r done, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf "%-8s %-24s %10s %10s %8s %10s %12s\n" config row before after ratio "torch" "after/torch"
for c in "${configs[@]}"; do
  set -- $c
  name=$1
  while read -r devices threads; do
    b=$(awk -v c="$name" -v d="$devices" -v t="$threads" '$1=="before" && $2==c && $3==d && $4==t {print $5}' "$results" | median)
    a=$(awk -v c="$name" -v d="$devices" -v t="$threads" '$1=="after" && $2==c && $3==d && $4==t {print $5}' "$results" | median)
    tt=$((devices > threads ? devices : threads))
    t=$(awk -v c="$name" -v t="$tt" '$1=="torch" && $2==c && $4==t {print $5}' "$results" | median)
    printf "%-8s %-24s %10.0f %10.0f %8.2f %10.0f %12.2f\n" "$name" "$devices device(s), $threads thread(s)" "$b" "$a" \
      "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$t" "$(awk -v a="$a" -v b="$t" 'BEGIN {print a / b}')"
  done < <(awk -v c="$name" '$1=="after" && $2==c {print $3, $4}' "$results" | sort -u)
done
echo "after: contraction GFLOP/s and single-core SGEMM, step wall and CPU time, per repetition"
cat "$rates"
rm -f "$results" "$rates"
