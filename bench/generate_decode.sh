#!/usr/bin/env bash
# Decode tokens/s of `tessera generate` (KV cache; docs/PERFORMANCE.md "Generation with a KV
# cache"). Trains the demo model (`tessera train`'s defaults: d_model 64, 2 layers, 4 heads, 2
# key/value heads, ffn 172) and a larger one (d_model 256, 8 layers) for a few steps with --save,
# then generates --tokens 256 greedily from 1 and from 4 prompts on 1 host device (paged cache in
# blocks of 16, and contiguous), and under tp on 2 (and on 4, the larger model), and 8 prompts
# continuously batched through 4 slots (--max-batch 4: two waves) on 1 device and tp on 2; then PyTorch's
# eager decode of the same shapes with a KV cache (bench/generate_vs_torch.py, Debian's
# python3-torch, $PYTHON) on 1 and 2 threads, side by side. Uses $TESSERA (default
# build/bin/tessera, RelWithDebInfo). Extra arguments go to every `tessera generate`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/machine.sh"
TESSERA=${TESSERA:-$root/build/bin/tessera}
python=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 2000); do echo "the quick brown fox jumps over the lazy dog, again and again. $i"; done >"$tmp/corpus"
declare -A models=([demo]="" [d256x8]="--d-model 256 --layers 8 --heads 8 --kv-heads 4 --ffn 688")
# The same shapes for PyTorch: vocab d_model layers heads kv_heads ffn.
declare -A torch_shapes=([demo]="256 64 2 4 2 172" [d256x8]="256 256 8 8 4 688")
for name in demo d256x8; do
  # shellcheck disable=SC2086
  "$TESSERA" train --devices 1 --steps 5 --batch 4 --seq 64 ${models[$name]} --corpus "$tmp/corpus" --sample 0 \
    --no-progress-bar --save "$tmp/$name" >/dev/null
  four="--prompt The --prompt A --prompt the --prompt again"
  eight="$four --prompt lazy --prompt fox --prompt quick --prompt over"
  for run in "1 prompt, 1 device, paged|--devices 1 --prompt The" \
             "1 prompt, 1 device, contiguous|--devices 1 --block-size 0 --prompt The" \
             "4 prompts, 1 device, paged|--devices 1 $four" \
             "4 prompts, 1 device, contiguous|--devices 1 --block-size 0 $four" \
             "4 prompts, tp on 2, paged|--plan tp --devices 2 $four" \
             "4 prompts, tp on 4, paged|--plan tp --devices 4 $four" \
             "8 prompts through 4 slots, 1 device, paged|--devices 1 --max-batch 4 $eight" \
             "8 prompts through 4 slots, tp on 2, paged|--plan tp --devices 2 --max-batch 4 $eight"; do
    # tp on 4 splits the key/value heads 4 ways: the demo model has 2.
    [[ $name == demo && $run == *"tp on 4"* ]] && continue
    # shellcheck disable=SC2086
    line=$("$TESSERA" generate --resume "$tmp/$name" --tokens 256 ${run#*|} "$@" | grep "tokens/s")
    echo "$name, ${run%%|*}: $line"
  done
  # PyTorch: the prompt "The" (3 bytes) and the four prompts (padded to 5), 255 decode steps.
  # shellcheck disable=SC2086
  "$python" "$root/bench/generate_vs_torch.py" "$name" ${torch_shapes[$name]} 1 3 256
  # shellcheck disable=SC2086
  "$python" "$root/bench/generate_vs_torch.py" "$name" ${torch_shapes[$name]} 4 5 256
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
