#!/usr/bin/env bash
# Tokens/s of one AdamW training step, Tessera (1 and 2 host devices) against PyTorch eager (1 and
# 2 threads), side by side in one run, for the tiny and the larger configuration of issue #6.
# Builds train_step_bench (Release, build-bench); PyTorch is Debian's python3-torch. The environment's
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are left as they are (pass UNSET_OPENBLAS=1 to unset both).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-bench}
if [ "${UNSET_OPENBLAS:-0}" = 1 ]; then unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; fi
source "$root/bench/machine.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target train_step_bench >/dev/null
python=${PYTHON:-/usr/bin/python3}
#        name   vocab d_model layers heads kv ffn batch seq steps
configs=("tiny   256   64      2      8     4  172 8     16  30"
         "larger 4096  256     4      8     4  684 8     128 10")
results=$(mktemp)
for c in "${configs[@]}"; do
  set -- $c
  "$build/bin/train_step_bench" "$@" >> "$results"
  "$python" "$root/bench/train_vs_torch.py" "$@" >> "$results"
done
printf "%-8s %-22s %12s %s\n" config runner tokens/s "ratio to torch, same parallelism"
while read -r who name n tps; do
  if [ "$who" = tessera ]; then
    torch=$(awk -v c="$name" -v n="$n" '$1=="torch" && $2==c && $3==n {print $4}' "$results")
    printf "%-8s %-22s %12s %.2f\n" "$name" "tessera, $n device(s)" "$tps" "$(awk -v a="$tps" -v b="$torch" 'BEGIN {print a / b}')"
  else
    printf "%-8s %-22s %12s\n" "$name" "pytorch, $n thread(s)" "$tps"
  fi
done < "$results"
rm -f "$results"
