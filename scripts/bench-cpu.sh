#!/usr/bin/env bash
# The CPU benchmark, in one run on one machine (nothing else should be running):
#   - `harness check configs/check.yaml` for onednn and libtorch-cpu (a timing counts only if
#     the backend computes the same step as the reference);
#   - then ROUNDS rounds (default 5), each of: the attainable float32 rate (one large oneDNN
#     convolution, 6x256x64x64 3x3, best of 10, same thread count), `onednn` and `libtorch-cpu`
#     side by side on configs/hourglass2.yaml, and `onednn` on configs/hourglass8.yaml.
# A shared machine drifts by several percent over minutes, so every figure is paired with the
# measurements taken next to it (the attainable rate of the same round, the other backend of the
# same run) and the summary gives the median over the rounds of those ratios.
#
#   scripts/bench-cpu.sh [OUT_DIR]    (default results/cpu; needs a Release build in ./build)
#   ROUNDS=9 scripts/bench-cpu.sh     (more rounds, a steadier median)
#
# Writes OUT_DIR/check.txt, OUT_DIR/attainable.csv, OUT_DIR/hourglass{2,8}-round<N>.csv (with
# their JSON sidecars: every sample, the manifests) and OUT_DIR/summary.md. Exits 1 when the
# check did not pass.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
out=${1:-results/cpu}
rounds=${ROUNDS:-5}
threads=2
harness="$build/harness"
for tool in "$harness" "$build/onednn_peak"; do
  [[ -x $tool ]] || { echo "bench-cpu: $tool not built (cmake --build $build)" >&2; exit 2; }
done
if [[ $("$harness" --version) == *-dirty* ]]; then
  echo "bench-cpu: warning: $harness was built from uncommitted changes; rebuild after committing" \
    "so that the results name the commit they measured" >&2
fi
mkdir -p "$out"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

attainable() {
  local line
  line=$("$build/onednn_peak" conv "$threads")
  echo "$line" >&2
  sed -n 's/.* \([0-9.]*\) GFLOP\/s.*/\1/p' <<<"$line"
}
# A cell of `harness report`'s row for BACKEND: report_cell MARKDOWN BACKEND COLUMN (1 = backend).
report_cell() {
  awk -F'|' -v backend="$2" -v column="$3" '
    { name = $2; gsub(/ /, "", name) }
    name == backend { cell = $(column + 1); gsub(/[ x%]/, "", cell); print cell; exit }' <<<"$1"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== conformance: onednn and libtorch-cpu against the reference"
check_status=0
"$harness" check configs/check.yaml --backends onednn,libtorch-cpu >"$out/check.txt" || check_status=$?
cat "$out/check.txt"

attainable_rows=() rows=()
for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds: attainable rate"
  peak=$(attainable)
  [[ -n $peak ]] || { echo "bench-cpu: could not read the attainable rate" >&2; exit 1; }
  attainable_rows+=("conv 6x256x64x64 3x3 fwd,$round,$threads,$peak,\"$cpu\",$build/onednn_peak conv $threads")
  echo "== round $round: hourglass2, onednn and libtorch-cpu"
  "$harness" run configs/hourglass2.yaml --backends onednn,libtorch-cpu --warmup 2 \
    --iterations 10 --output "$out/hourglass2-round$round.csv"
  echo "== round $round: hourglass8, onednn"
  "$harness" run configs/hourglass8.yaml --backends onednn --warmup 2 --iterations 6 \
    --output "$out/hourglass8-round$round.csv"
  small=$("$harness" report "$out/hourglass2-round$round.csv" --baseline onednn --attainable "$peak")
  large=$("$harness" report "$out/hourglass8-round$round.csv" --attainable "$peak")
  # Columns of the report: 7 median ms, 10 GFLOP/s, 14 of attainable, 15 vs the baseline.
  rows+=("| $round | $peak | $(report_cell "$large" onednn 7) | $(report_cell "$large" onednn 10) | $(report_cell "$large" onednn 14)% | $(report_cell "$small" onednn 7) | $(report_cell "$small" libtorch-cpu 7) | $(report_cell "$small" libtorch-cpu 15)x |")
done
{
  echo "what,round,threads,gflops,cpu,command"
  printf '%s\n' "${attainable_rows[@]}"
} >"$out/attainable.csv.tmp" && mv "$out/attainable.csv.tmp" "$out/attainable.csv"

fractions=$(printf '%s\n' "${rows[@]}" | awk -F'|' '{ gsub(/[ %]/, "", $6); print $6 }' | median)
ratios=$(printf '%s\n' "${rows[@]}" | awk -F'|' '{ gsub(/[ x]/, "", $9); print $9 }' | median)
{
  echo "# CPU benchmark: $cpu, $threads threads"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), harness $("$harness" --version)."
  echo
  echo "- \`onednn\` on hourglass8: **${fractions}%** of the attainable float32 rate (median over $rounds rounds)"
  echo "- hourglass2, \`libtorch-cpu\` / \`onednn\`: **${ratios}x** (median over $rounds rounds)"
  echo
  echo "| round | attainable GFLOP/s | hourglass8 onednn ms | GFLOP/s | of attainable | hourglass2 onednn ms | libtorch-cpu ms | libtorch / onednn |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Attainable rate: \`$build/onednn_peak conv $threads\`. Per-round CSVs and JSON sidecars beside"
  echo "this file; \`$harness report FILE\` shows any of them in full."
  echo
  echo "## Conformance (\`harness check configs/check.yaml\`)"
  echo
  echo '```'
  cat "$out/check.txt"
  echo '```'
  echo
  echo "## Charts (\`harness report $out/hourglass*-round*.csv --charts $out/charts\`)"
  echo
  "$harness" report "$out"/hourglass*-round*.csv --charts "$out/charts" \
    --output "$out/charts/report.md" >&2 && grep '^!\[' "$out/charts/report.md" | sed 's|](|](charts/|; s|$|\n|'
} >"$out/summary.md.tmp" && mv "$out/summary.md.tmp" "$out/summary.md"
echo
cat "$out/summary.md"
exit "$check_status"
