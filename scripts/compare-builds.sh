#!/usr/bin/env bash
# The same backends timed by two builds of the harness and its plugins, in interleaved rounds (the
# order alternating from round to round), to show what a change costs or saves: per backend, each
# build's median step in each round, and the median over the rounds of B's over A's.
#
#   scripts/compare-builds.sh BUILD_A BUILD_B [CONFIG] [BACKENDS]
#       (default configs/hourglass2.yaml, onednn,libtorch-cpu)
#   ROUNDS=5 WARMUP=2 ITERATIONS=10 scripts/compare-builds.sh ...   (the defaults: 3, 2, 10)
#
# Writes OUT (default a new temporary folder) /<a|b>-round<N>.csv and prints the table.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build_a=$1 build_b=$2
config=${3:-configs/hourglass2.yaml}
backends=${4:-onednn,libtorch-cpu}
rounds=${ROUNDS:-3} warmup=${WARMUP:-2} iterations=${ITERATIONS:-10}
out=${OUT:-$(mktemp -d)}
for build in "$build_a" "$build_b"; do
  [[ -x $build/harness ]] || { echo "compare-builds: no $build/harness" >&2; exit 2; }
done
mkdir -p "$out"
run() {  # run a|b ROUND
  local build=$build_a
  [[ $1 == b ]] && build=$build_b
  echo "== round $2: build $1 ($build, $("$build/harness" --version))"
  "$build/harness" run "$config" --rounds 1 --backends "$backends" --warmup "$warmup" \
    --iterations "$iterations" --output "$out/$1-round$2.csv" >/dev/null
}
for round in $(seq 1 "$rounds"); do
  if ((round % 2)); then run a "$round"; run b "$round"; else run b "$round"; run a "$round"; fi
done
# backend -> median ms of one CSV, by the header's column names.
medians() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
           { print $col["backend"], $col["median_ms"] }' "$1"
}
echo
echo "| backend | round | A ms | B ms | B / A |"
echo "|---|---:|---:|---:|---:|"
declare -A ratios
for round in $(seq 1 "$rounds"); do
  while read -r backend a; do
    b=$(medians "$out/b-round$round.csv" | awk -v n="$backend" '$1 == n { print $2 }')
    [[ -n $a && -n $b ]] || continue
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')
    ratios[$backend]+="$r "
    printf '| %s | %s | %.1f | %.1f | %s |\n' "$backend" "$round" "$a" "$b" "$r"
  done < <(medians "$out/a-round$round.csv")
done
echo
for backend in "${!ratios[@]}"; do
  median=$(tr ' ' '\n' <<<"${ratios[$backend]}" | sed '/^$/d' | sort -g |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  echo "$backend: B / A median over $rounds rounds = $median"
done
echo "CSVs: $out"
