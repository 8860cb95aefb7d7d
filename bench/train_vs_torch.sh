#!/usr/bin/env bash
# Tokens/s of one AdamW training step, Tessera (1 host device on 1 thread, then 1 and 2 host devices
# with the whole thread budget: TESSERA_THREADS, or the cores) against PyTorch eager (1 and 2
# threads), side by side in one run, for the tiny and the larger configuration of issue #6. Each
# Tessera row is compared with PyTorch on as many threads, and with 1 device on 1 thread.
# Builds train_step_bench (Release, build-bench); PyTorch is Debian's python3-torch. The environment's
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are left as they are (pass UNSET_OPENBLAS=1 to unset both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-bench}
if [ "${UNSET_OPENBLAS:-0}" = 1 ]; then unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; fi
source "$root/bench/machine.sh"
# SKIP_BUILD=1 runs the train_step_bench already in $BUILD (a build of another type, as it is).
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "${JOBS:-2}" --target train_step_bench >/dev/null
fi
python=${PYTHON:-/usr/bin/python3}
#        name   vocab d_model layers heads kv ffn batch seq steps
configs=("tiny   256   64      2      8     4  172 8     16  30"
         "larger 4096  256     4      8     4  684 8     128 10")
results=$(mktemp)
declare -A tokens_per_step
for c in "${configs[@]}"; do
  set -- $c
  tokens_per_step[$1]=$(( $8 * $9 ))
  "$build/bin/train_step_bench" "$@" >> "$results"
  "$python" "$root/bench/train_vs_torch.py" "$@" >> "$results"
done
printf "%-8s %-34s %12s %-14s %s\n" config runner tokens/s "vs 1 thread" "ratio to torch, same threads"
while read -r who name n tps threads; do
  if [ "$who" = flops ]; then
    # A ceiling: one thread running only the step's contractions at the best single-core SGEMM
    # rate measured above. PyTorch's 1-thread row over this bound is the most any runner can beat
    # it by on one thread.
    torch=$(awk -v c="$name" '$1=="torch" && $2==c && $3==1 {print $4}' "$results")
    awk -v c="$name" -v f="$n" -v peak="$tps" -v t="$torch" -v seqs="${tokens_per_step[$name]}" 'BEGIN {
      ceiling = seqs / (f / (peak * 1e9));
      printf "%-8s %-34s %12.0f %-14s %s\n", c, "ceiling: contractions at " peak " GFLOP/s", ceiling, "",
             (t > 0 ? sprintf("PyTorch 1 thread is %.0f %% of it: at most %.2fx PyTorch", 100 * t / ceiling, ceiling / t) : "")
    }'
    continue
  fi
  if [ "$who" = tessera ]; then
    torch=$(awk -v c="$name" -v n="$threads" '$1=="torch" && $2==c && $3==n {print $4}' "$results")
    base=$(awk -v c="$name" '$1=="tessera" && $2==c && $3==1 && $5==1 {print $4}' "$results")
    ratio=$(awk -v a="$tps" -v b="$torch" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}')
    speedup=$(awk -v a="$tps" -v b="$base" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}')
    printf "%-8s %-34s %12s %-14s %s\n" "$name" "tessera, $n device(s), $threads thread(s)" "$tps" "$speedup" "$ratio"
  else
    printf "%-8s %-34s %12s\n" "$name" "pytorch, $n thread(s)" "$tps"
  fi
done < <(grep -v '^flops' "$results"; grep '^flops' "$results")
rm -f "$results"
