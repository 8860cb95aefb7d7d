#!/usr/bin/env bash
# Builds the fuzzers' seed corpora, one folder per target under OUTPUT_DIR (OUTPUT_DIR/npy/, ...):
#   * every target: the small valid inputs `fuzz_seeds TARGET DIR` writes (made by Tessera's own
#     writers; fuzz/seeds.cpp), plus that target's regression files in fuzz/regressions/<target>/;
#   * parser, also: every **/*.mlir file of the conformance folder (the second argument, or
#     $TESSERA_CONFORMANCE_DIR), cut at `// -----` lines into one seed file per piece;
#   * program: the parser's corpus too (every piece that runs small is a program to run twice).
# Corpora are generated, never committed: put them under build-fuzz/, which .gitignore covers.
# Usage: fuzz/make_corpus.sh OUTPUT_DIR [CONFORMANCE_DIR]
# ($FUZZ_SEEDS names the fuzz_seeds binary; default build-fuzz/bin/fuzz_seeds.)
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 OUTPUT_DIR [CONFORMANCE_DIR]" >&2
  exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
seeds_bin=${FUZZ_SEEDS:-$root/build-fuzz/bin/fuzz_seeds}
conformance=${2:-${TESSERA_CONFORMANCE_DIR:-}}
if [ ! -x "$seeds_bin" ]; then
  echo "no fuzz_seeds at $seeds_bin: build it (cmake --build build-fuzz --target fuzz_seeds) or set FUZZ_SEEDS" >&2
  exit 1
fi
if [ -n "$conformance" ] && [ ! -d "$conformance" ]; then
  echo "no conformance folder at $conformance" >&2
  exit 1
fi

for target in parser npy safetensors checkpoint mesh_spec input_spec program; do
  mkdir -p "$out/$target"
  "$seeds_bin" "$target" "$out/$target"
  if [ -d "$root/fuzz/regressions/$target" ]; then
    find "$root/fuzz/regressions/$target" -type f ! -name '*.md' -exec cp {} "$out/$target/" \;
  fi
done

files=0
[ -n "$conformance" ] && while IFS= read -r -d '' file; do
  rel=${file#"$conformance"/}
  stem=$(printf '%s' "${rel%.mlir}" | tr '/' '_')
  # One output file per piece: <stem>.<n>.mlir, n counting from 0.
  awk -v prefix="$out/parser/$stem" '
    BEGIN { n = 0; name = prefix "." n ".mlir"; printf "" > name }
    /^[ \t]*\/\/ -----[ \t]*$/ { close(name); n++; name = prefix "." n ".mlir"; printf "" > name; next }
    { print > name }
  ' "$file"
  files=$((files + 1))
done < <(find "$conformance" -name '*.mlir' -type f -print0 | sort -z)

cp "$out"/parser/* "$out/program/"

for target in parser npy safetensors checkpoint mesh_spec input_spec program; do
  echo "$target: $(find "$out/$target" -type f | wc -l) seeds in $out/$target"
done
[ -n "$conformance" ] && echo "parser: $files conformance files cut into pieces"
exit 0
