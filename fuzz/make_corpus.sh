#!/usr/bin/env bash
# Builds the parser fuzzer's seed corpus: every **/*.mlir file of the conformance folder (the
# argument, or $TESSERA_CONFORMANCE_DIR), cut at `// -----` lines into one seed file per piece, plus
# the regression seeds in fuzz/regressions/. Without a conformance folder the corpus is the
# regression seeds alone. Usage: fuzz/make_corpus.sh OUTPUT_DIR [CONFORMANCE_DIR]
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 OUTPUT_DIR [CONFORMANCE_DIR]" >&2
  exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
conformance=${2:-${TESSERA_CONFORMANCE_DIR:-}}
if [ -n "$conformance" ] && [ ! -d "$conformance" ]; then
  echo "no conformance folder at $conformance" >&2
  exit 1
fi
mkdir -p "$out"

files=0
[ -n "$conformance" ] && while IFS= read -r -d '' file; do
  rel=${file#"$conformance"/}
  stem=$(printf '%s' "${rel%.mlir}" | tr '/' '_')
  # One output file per piece: <stem>.<n>.mlir, n counting from 0.
  awk -v prefix="$out/$stem" '
    BEGIN { n = 0; name = prefix "." n ".mlir"; printf "" > name }
    /^[ \t]*\/\/ -----[ \t]*$/ { close(name); n++; name = prefix "." n ".mlir"; printf "" > name; next }
    { print > name }
  ' "$file"
  files=$((files + 1))
done < <(find "$conformance" -name '*.mlir' -type f -print0 | sort -z)

if [ -d "$root/fuzz/regressions" ]; then
  find "$root/fuzz/regressions" -type f ! -name '*.md' -exec cp {} "$out/" \;
fi
echo "$files files -> $(find "$out" -type f | wc -l) seeds in $out"
