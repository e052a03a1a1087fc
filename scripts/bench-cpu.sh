#!/usr/bin/env bash
# The CPU benchmark, in one run on one machine (nothing else should be running):
#   1. the attainable float32 rate: one large oneDNN convolution (6x256x64x64, 3x3, 256 filters),
#      best of 10, with the same thread count as the backends, before and after the runs;
#   2. `harness check configs/check.yaml` for both backends (a timing counts only if it passes);
#   3. `onednn` and `libtorch-cpu` side by side on configs/hourglass2.yaml;
#   4. `onednn` on configs/hourglass8.yaml;
# then a summary (`harness report`): ms per step, achieved GFLOP/s, the fraction of the
# attainable rate, and each backend's time relative to onednn.
#
#   scripts/bench-cpu.sh [OUT_DIR]      (default results/cpu; needs a Release build in ./build)
#
# Writes OUT_DIR/check.txt, OUT_DIR/attainable.csv, OUT_DIR/hourglass2.csv and
# OUT_DIR/hourglass8.csv (with their JSON sidecars: every sample, the manifests) and
# OUT_DIR/summary.md. Exits 1 when the check did not pass.
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

# The attainable rate is measured before and after the runs and the higher figure is used: on a
# shared machine a low reading would flatter every fraction of it.
attainable() {
  local line
  line=$("$build/onednn_peak" conv "$threads")
  echo "$line" >&2
  sed -n 's/.* \([0-9.]*\) GFLOP\/s.*/\1/p' <<<"$line"
}
echo "== attainable float32 rate ($threads threads)"
peak_before=$(attainable)
[[ -n $peak_before ]] || { echo "bench-cpu: could not read the attainable rate" >&2; exit 1; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

echo "== conformance: onednn and libtorch-cpu against the reference"
check_status=0
"$harness" check configs/check.yaml --backends onednn,libtorch-cpu >"$out/check.txt" || check_status=$?
cat "$out/check.txt"

echo "== hourglass2: onednn and libtorch-cpu"
"$harness" run configs/hourglass2.yaml --backends onednn,libtorch-cpu \
  --output "$out/hourglass2.csv"
echo "== hourglass8: onednn"
"$harness" run configs/hourglass8.yaml --backends onednn --output "$out/hourglass8.csv"

echo "== attainable float32 rate again"
peak_after=$(attainable)
peak=$(awk -v a="$peak_before" -v b="${peak_after:-0}" 'BEGIN { print (a > b ? a : b) }')
{
  echo "what,when,threads,gflops,cpu,command"
  for when in before after; do
    value=$([[ $when == before ]] && echo "$peak_before" || echo "$peak_after")
    echo "conv 6x256x64x64 3x3 fwd,$when,$threads,$value,\"$cpu\",$build/onednn_peak conv $threads"
  done
} >"$out/attainable.csv.tmp" && mv "$out/attainable.csv.tmp" "$out/attainable.csv"

{
  echo "# CPU benchmark: $cpu, $threads threads"
  echo
  echo "Attainable float32 rate: **$peak GFLOP/s**, the higher of $peak_before (before the runs)"
  echo "and $peak_after (after) from \`$build/onednn_peak conv $threads\`."
  echo
  echo "## Conformance (\`harness check configs/check.yaml\`)"
  echo
  echo '```'
  cat "$out/check.txt"
  echo '```'
  echo
  echo "## hourglass2: onednn and libtorch-cpu side by side"
  echo
  "$harness" report "$out/hourglass2.csv" --baseline onednn --attainable "$peak"
  echo
  echo "## hourglass8: onednn"
  echo
  "$harness" report "$out/hourglass8.csv" --attainable "$peak"
} >"$out/summary.md.tmp" && mv "$out/summary.md.tmp" "$out/summary.md"
echo
cat "$out/summary.md"
exit "$check_status"
