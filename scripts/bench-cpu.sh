#!/usr/bin/env bash
# The CPU benchmark, in one run on one machine (nothing else should be running):
#   1. the attainable float32 rate: one large oneDNN convolution (6x256x64x64, 3x3, 256 filters),
#      best of 10, with the same thread count as the backends;
#   2. `onednn` and `libtorch-cpu` side by side on configs/hourglass2.yaml;
#   3. `onednn` on configs/hourglass8.yaml;
# then a summary: ms per step, achieved GFLOP/s, the fraction of the attainable rate, and the
# libtorch / onednn ratio.
#
#   scripts/bench-cpu.sh [OUT_DIR]      (default results/cpu; needs a Release build in ./build)
#
# Writes OUT_DIR/attainable.csv, OUT_DIR/hourglass2.csv, OUT_DIR/hourglass8.csv (with their JSON
# sidecars: every sample, the manifests) and OUT_DIR/summary.md.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
out=${1:-results/cpu}
threads=2
harness="$build/harness"
for tool in "$harness" "$build/onednn_peak"; do
  [[ -x $tool ]] || { echo "bench-cpu: $tool not built (cmake --build $build)" >&2; exit 2; }
done
mkdir -p "$out"

# Looks a column up by its header name (results/README.md: columns are only ever appended).
column() {  # column CSV NAME -> one value per row
  awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == name) c = i; next }
                         { print $c }' "$1"
}

echo "== attainable float32 rate ($threads threads)"
peak_line=$("$build/onednn_peak" conv "$threads")
echo "$peak_line"
peak=$(sed -n 's/.*: \([0-9.]*\) GFLOP\/s.*/\1/p' <<<"$peak_line")
[[ -n $peak ]] || { echo "bench-cpu: could not read the attainable rate" >&2; exit 1; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
{
  echo "what,threads,gflops,cpu,command"
  echo "conv 6x256x64x64 3x3 fwd,$threads,$peak,\"$cpu\",$build/onednn_peak conv $threads"
} >"$out/attainable.csv.tmp" && mv "$out/attainable.csv.tmp" "$out/attainable.csv"

echo "== hourglass2: onednn and libtorch-cpu"
"$harness" run configs/hourglass2.yaml --backends onednn,libtorch-cpu \
  --output "$out/hourglass2.csv"
echo "== hourglass8: onednn"
"$harness" run configs/hourglass8.yaml --backends onednn --output "$out/hourglass8.csv"

summary() {  # summary CSV
  paste -d, <(column "$1" backend) <(column "$1" status) <(column "$1" median_ms) \
    <(column "$1" iqr_ms) <(column "$1" gflops) |
    awk -F, -v peak="$peak" -v config="$(basename "$1" .csv)" '{
      fraction = $5 > 0 ? sprintf("%.1f%%", 100 * $5 / peak) : "";
      printf "| %s | %s | %s | %.0f | %.0f | %.1f | %s |\n", config, $1, $2, $3, $4, $5, fraction }'
}
ratio() {  # ratio CSV SLOW FAST
  paste -d, <(column "$1" backend) <(column "$1" median_ms) |
    awk -F, -v slow="$2" -v fast="$3" '$1 == slow { s = $2 } $1 == fast { f = $2 }
      END { if (s > 0 && f > 0) printf "%.2f", s / f; else printf "n/a" }'
}

{
  echo "# CPU benchmark"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $cpu, $threads threads, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo "Attainable float32 rate: **$peak GFLOP/s** (\`$build/onednn_peak conv $threads\`)."
  echo
  echo "| config | backend | status | median ms/step | IQR ms | GFLOP/s | of attainable |"
  echo "|---|---|---|---:|---:|---:|---:|"
  summary "$out/hourglass2.csv"
  summary "$out/hourglass8.csv"
  echo
  echo "hourglass2: libtorch-cpu / onednn = **$(ratio "$out/hourglass2.csv" libtorch-cpu onednn)x**."
} >"$out/summary.md.tmp" && mv "$out/summary.md.tmp" "$out/summary.md"
echo
cat "$out/summary.md"
