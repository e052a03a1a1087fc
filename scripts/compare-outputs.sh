#!/usr/bin/env bash
# What two checkouts' harnesses write for the same work, compared file by file apart from what
# changes from run to run: every output of `list`, `run`, `check`, `report`, `layers` and
# `publish` on configs/tiny.yaml and configs/check.yaml (each checkout's own), with times, dates,
# commits, checksums and measured figures masked. For a change that should move code without
# changing what any command says.
#
#   scripts/compare-outputs.sh TREE_A TREE_B [BACKENDS]
#       TREE_x: a checkout with its build in TREE_x/build; BACKENDS: check.yaml's entries to run
#       (default reference,onednn,libtorch-cpu,tensorflow-unfused)
#
# Writes OUT (default a new temporary folder) /a and /b, the masked copies in /a.masked and
# /b.masked, and prints the differences; exits 1 when there are any. MASK_ONLY=1 compares what OUT
# already holds again.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
tree_a=$1 tree_b=$2
backends=${3:-reference,onednn,libtorch-cpu,tensorflow-unfused}
out=${OUT:-$(mktemp -d)}
for tree in "$tree_a" "$tree_b"; do
  [[ -x $tree/build/harness ]] || { echo "compare-outputs: no $tree/build/harness" >&2; exit 2; }
done

# outputs TREE DIR: every command's output, stdout and files, into DIR.
outputs() {
  local tree=$1 dir=$2 h
  h=$(realpath "$tree/build/harness")
  rm -rf "$dir" && mkdir -p "$dir"
  (
    cd "$tree"
    set +e
    # Each its own record of passed checks (the check column), none from the other tree.
    export XDG_CACHE_HOME=$dir/cache
    "$h" list >"$dir/list.txt" 2>&1
    "$h" list --json >"$dir/list.json" 2>&1
    "$h" run configs/tiny.yaml --output "$dir/run/tiny.csv" >"$dir/run.txt" 2>&1
    "$h" run configs/tiny.yaml --json --output "$dir/run/tiny-json.csv" >"$dir/run.json" 2>&1
    "$h" check configs/tiny.yaml >"$dir/check-tiny.txt" 2>&1
    "$h" check configs/tiny.yaml --json >"$dir/check-tiny.json" 2>&1
    "$h" check configs/check.yaml --backends "$backends" >"$dir/check.txt" 2>&1
    "$h" check configs/check.yaml --backends onednn --layers >"$dir/check-layers.txt" 2>&1
    "$h" report "$dir/run/tiny.csv" >"$dir/report.md" 2>&1
    "$h" report "$dir/run/tiny.csv" --by kind >"$dir/report-by-kind.md" 2>&1
    "$h" layers configs/tiny.yaml --repetitions 2 --iterations 1 --output "$dir/layers/tiny.csv" \
      --json "$dir/layers/tiny.json" >"$dir/layers.txt" 2>&1
    "$h" publish "$dir/run/tiny.csv" --to "$dir/published/tiny" --allow-unchecked \
      >"$dir/publish.txt" 2>&1
    true
  )
}
if [[ -z ${MASK_ONLY:-} ]]; then  # MASK_ONLY=1: compare what OUT already holds again
  outputs "$tree_a" "$out/a"
  outputs "$tree_b" "$out/b"
fi

# What differs from run to run: the output folder's and the tree's paths, dates and times,
# commits, SHA-256 sums, every decimal figure (times, rates, losses, spreads) and the measured
# whole numbers of the layer table (after its first `|`).
mask() {
  local from=$1 to=$2 folder=$3 tree
  tree=$(realpath "$4")
  rm -rf "$to" && cp -r "$from" "$to"
  rm -rf "$to/cache"
  find "$to" -type f -print0 | xargs -0 sed -i -E \
    -e "s#$folder#OUT#g; s#$tree#TREE#g" \
    -e 's#[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?#DATE#g' \
    -e 's#\b[0-9a-f]{40}\b#COMMIT#g; s#\b[0-9a-f]{64}\b#SHA256#g; s#\b[0-9a-f]{12}\.\.\.#SHA256#g' \
    -e 's#\b[0-9a-f]{12}(-dirty)?\b#COMMIT#g' \
    -e 's#-?[0-9]+\.[0-9]+(e[-+]?[0-9]+)?#N#g' \
    -e 's#\b[0-9]+ (ms|s|min)\b#N \1#g'
}
mask "$out/a" "$out/a.masked" "$out/a" "$tree_a"
mask "$out/b" "$out/b.masked" "$out/b" "$tree_b"
# Whether a run was noisy is measured too; and a table's column widths follow its figures, the
# layer table's row order its times.
for masked in "$out/a.masked" "$out/b.masked"; do
  find "$masked" -type f -print0 | xargs -0 sed -i -E \
    -e 's#"noisy": (true|false)#"noisy": B#; s#N,(true|false),N#N,B,N#g; s# \(noisy\)##g' \
    -e '/: noisy, IQR\/median/d; /^$/d'
  find "$masked" -name '*.txt' -print0 | xargs -0 sed -i -E 's#  +# #g'
  perl -i -pe 's/^([^|]*\|)(.*)$/$1 . ($2 =~ s{\b[0-9]+\b}{N}gr)/e' "$masked/layers.txt"
  sort -o "$masked/layers.txt" "$masked/layers.txt"
done
if diff -r "$out/a.masked" "$out/b.masked"; then
  echo "compare-outputs: the same outputs, apart from what changes from run to run ($out)"
else
  echo "compare-outputs: the outputs differ ($out)"
  exit 1
fi
