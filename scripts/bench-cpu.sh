#!/usr/bin/env bash
# The CPU benchmark, in one run on one machine (nothing else should be running):
#   - `harness check configs/check.yaml` for every CPU backend in every library version built
#     (a timing counts only if the backend computes the same step as the reference);
#   - then ROUNDS rounds (default 5), each of: the attainable float32 rate (one large oneDNN
#     convolution, 6x256x64x64 3x3, best of 10, same thread count); on configs/hourglass2.yaml the
#     `onednn` and `libtorch-cpu` backends on today's libraries and on Debian's (`onednn-debian`,
#     `libtorch-cpu-debian`), then PyTorch itself as a peer, eager and under torch.compile
#     (scripts/pytorch-peer.py on the run's --dump, its first loss checked against libtorch-cpu's);
#     `tensorflow` (TensorFlow's own kernels) and TensorFlow itself as its peer, a TF1 graph in a
#     tf.compat.v1.Session and a TF2 tf.function (scripts/tensorflow-peer.py, its first loss
#     checked against the plugin's); and `onednn` and `onednn-debian` on configs/hourglass8.yaml.
# A shared machine drifts by several percent over minutes, so every figure is paired with the
# measurements taken next to it (the attainable rate of the same round, the other backends of the
# same run) and the summary gives the median over the rounds of those ratios.
#
#   scripts/bench-cpu.sh [OUT_DIR]    (default results/cpu; needs a Release build in ./build and
#                                      scripts/setup.sh's PyPI wheels for the PyTorch peers)
#   ROUNDS=9 scripts/bench-cpu.sh     (more rounds, a steadier median)
#
#   - then, once, `harness layers configs/hourglass2.yaml --backends onednn,libtorch-cpu`: each
#     layer configuration timed alone, and the sum of the parts against the whole step.
# Writes OUT_DIR/check.txt, OUT_DIR/attainable.csv, OUT_DIR/hourglass{2,8}-round<N>.csv (with
# their JSON sidecars: every sample, the manifests), OUT_DIR/pytorch-{eager,compile}-round<N>.json,
# OUT_DIR/tensorflow-{tf1,tf2}-round<N>.json,
# OUT_DIR/layers-hourglass2.{txt,csv,json} and OUT_DIR/summary.md. Exits 1 when the check did not
# pass.
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
python=$(bash scripts/setup.sh --pypi-prefix)/bin/python
[[ -x $python ]] || { echo "bench-cpu: no $python: run scripts/setup.sh" >&2; exit 2; }
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
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# "met (TEXT)" when VALUE >= TARGET, else "NOT met (TEXT)": meets VALUE TARGET TEXT
meets() { awk -v v="$1" -v t="$2" -v text="$3" 'BEGIN { print (v >= t ? "met" : "NOT met") " (target: " text ")" }'; }
# Whether a time ratio is at most 1 + FRACTION (not slower by more than that): not_slower RATIO FRACTION TEXT
not_slower() { awk -v r="$1" -v f="$2" -v text="$3" 'BEGIN { print (r <= 1 + f + 1e-9 ? "met" : "NOT met") " (target: " text ")" }'; }
# The median of column COLUMN (1-based, counted as in the summary's table) over the rows.
column_median() { printf '%s\n' "${rows[@]}" | awk -F'|' -v c="$1" '{ v = $(c + 1); gsub(/[ x%]/, "", v); print v }' | median; }

cpu_backends=onednn,libtorch-cpu,onednn-debian,libtorch-cpu-debian,tensorflow
echo "== conformance: $cpu_backends against the reference"
check_status=0
"$harness" check configs/check.yaml --backends "$cpu_backends" >"$out/check.txt" || check_status=$?
cat "$out/check.txt"

# This script's own outputs of an earlier run would mix with this run's in the charts.
rm -f "$out"/hourglass*-round*.csv "$out"/hourglass*-round*.json "$out"/pytorch-*-round*.json \
  "$out"/tensorflow-*-round*.json
dump=$(mktemp -d)
trap 'rm -rf "$dump"' EXIT
dump_once=(--dump "$dump/hourglass2")  # the first round's run writes the peers' problem
attainable_rows=() rows=()
for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds: attainable rate"
  peak=$(attainable)
  [[ -n $peak ]] || { echo "bench-cpu: could not read the attainable rate" >&2; exit 1; }
  attainable_rows+=("conv 6x256x64x64 3x3 fwd,$round,$threads,$peak,\"$cpu\",$build/onednn_peak conv $threads")
  echo "== round $round: hourglass2, $cpu_backends"
  "$harness" run configs/hourglass2.yaml --rounds 1 --backends "$cpu_backends" --warmup 2 \
    --iterations 10 --output "$out/hourglass2-round$round.csv" "${dump_once[@]}"
  dump_once=()
  small=$("$harness" report "$out/hourglass2-round$round.csv" --baseline onednn --attainable "$peak")
  peers=()
  for mode in eager compile; do
    echo "== round $round: hourglass2, PyTorch $mode"
    "$python" scripts/pytorch-peer.py "$dump/hourglass2" --mode "$mode" --threads "$threads" \
      --warmup 2 --iterations 10 --expect-loss "$(report_cell "$small" libtorch-cpu 12)" \
      --json "$out/pytorch-$mode-round$round.json"
    peers+=("$(sed -n 's/^ "median_ms": \([0-9.]*\),$/\1/p' "$out/pytorch-$mode-round$round.json" |
      awk '{ printf "%.2f", $1 }')")
  done
  for style in tf1 tf2; do
    echo "== round $round: hourglass2, TensorFlow $style"
    "$python" scripts/tensorflow-peer.py "$dump/hourglass2" --style "$style" --threads "$threads" \
      --onednn off --warmup 2 --iterations 10 \
      --expect-loss "$(report_cell "$small" tensorflow 12)" --json "$out/tensorflow-$style-round$round.json"
    peers+=("$(sed -n 's/^ "median_ms": \([0-9.]*\),$/\1/p' "$out/tensorflow-$style-round$round.json" |
      awk '{ printf "%.2f", $1 }')")
  done
  echo "== round $round: hourglass8, onednn and onednn-debian"
  "$harness" run configs/hourglass8.yaml --rounds 1 --backends onednn,onednn-debian --warmup 2 --iterations 6 \
    --output "$out/hourglass8-round$round.csv"
  large=$("$harness" report "$out/hourglass8-round$round.csv" --attainable "$peak")
  # Columns of the report: 7 median ms, 10 GFLOP/s, 14 of attainable.
  l8=$(report_cell "$large" onednn 7) d8=$(report_cell "$large" onednn-debian 7)
  o2=$(report_cell "$small" onednn 7) d2=$(report_cell "$small" onednn-debian 7)
  t2=$(report_cell "$small" libtorch-cpu 7) u2=$(report_cell "$small" libtorch-cpu-debian 7)
  f2=$(report_cell "$small" tensorflow 7)
  faster_tf=$(awk -v a="${peers[2]}" -v b="${peers[3]}" 'BEGIN { print (a < b ? a : b) }')
  rows+=("| $round | $peak | $l8 | $(report_cell "$large" onednn 14)% | $d8 | $(ratio "$d8" "$l8")x | $o2 | $d2 | $(ratio "$d2" "$o2")x | $t2 | $u2 | $(ratio "$u2" "$t2")x | $(ratio "$t2" "$o2")x | ${peers[0]} | ${peers[1]} | $(ratio "$t2" "${peers[0]}")x | $(ratio "${peers[1]}" "${peers[0]}")x | $(ratio "${peers[0]}" "$o2")x | $f2 | ${peers[2]} | ${peers[3]} | $(ratio "$f2" "$faster_tf")x | $(ratio "$f2" "$t2")x |")
done
{
  echo "what,round,threads,gflops,cpu,command"
  printf '%s\n' "${attainable_rows[@]}"
} >"$out/attainable.csv.tmp" && mv "$out/attainable.csv.tmp" "$out/attainable.csv"

echo "== layer by layer: hourglass2, onednn and libtorch-cpu"
"$harness" layers configs/hourglass2.yaml --backends onednn,libtorch-cpu \
  --output "$out/layers-hourglass2.csv" --json "$out/layers-hourglass2.json" \
  >"$out/layers-hourglass2.txt"

torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)
{
  echo "# CPU benchmark: $cpu, $threads threads"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), harness $("$harness" --version); medians over $rounds rounds."
  echo
  echo "- \`onednn\` (oneDNN 3.x) on hourglass8: **$(column_median 4)%** of the attainable float32 rate"
  echo "- oneDNN 2.6 against 3.x, same plugin source: hourglass8 **$(column_median 6)x**, hourglass2 **$(column_median 9)x** the time"
  echo "- LibTorch 1.13 against 2.x, same plugin source (hourglass2): **$(column_median 12)x** the time"
  echo "- hourglass2, \`libtorch-cpu\` / \`onednn\`: **$(column_median 13)x**"
  echo "- PyTorch $torch_version itself (hourglass2): \`libtorch-cpu\` / eager PyTorch **$(column_median 16)x**; torch.compile / eager **$(column_median 17)x**"
  echo
  echo "Targets (docs/layers.md, \"The CPU targets\"), medians over the rounds:"
  echo
  echo "- eager PyTorch / \`onednn\` on hourglass2: **$(column_median 18)x**, $(meets "$(column_median 18)" 1.5 "at least 1.5x")"
  echo "- \`onednn\` on hourglass8: **$(column_median 4)%** of the attainable rate, $(meets "$(column_median 4)" 80 "at least 80%")"
  echo "- \`libtorch-cpu\` / eager PyTorch: **$(column_median 16)x**, $(not_slower "$(column_median 16)" 0.05 "at most 5% slower: the LibTorch baseline is as fast as PyTorch used as its users use it")"
  echo "- \`tensorflow\` / the faster of TensorFlow's TF1 and TF2 styles: **$(column_median 22)x**, $(not_slower "$(column_median 22)" 0.05 "at most 5% slower: the TensorFlow baseline is as fast as TensorFlow used as its users use it")"
  echo
  echo "| round | attainable GFLOP/s | hg8 onednn ms | of attainable | hg8 onednn-debian ms | debian / onednn | hg2 onednn ms | onednn-debian ms | debian / onednn | libtorch-cpu ms | libtorch-cpu-debian ms | debian / libtorch | libtorch / onednn | PyTorch eager ms | torch.compile ms | libtorch / eager | compile / eager | eager / onednn | tensorflow ms | TF1 peer ms | TF2 peer ms | tensorflow / faster peer | tensorflow / libtorch |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Attainable rate: \`$build/onednn_peak conv $threads\`. Per-round CSVs and JSON sidecars beside"
  echo "this file; \`$harness report FILE\` shows any of them in full."
  echo
  echo "## Layer by layer (\`harness layers configs/hourglass2.yaml --backends onednn,libtorch-cpu\`)"
  echo
  echo "After the rounds; \`layers-hourglass2.csv\` and Google Benchmark's \`layers-hourglass2.json\`"
  echo "beside this file (docs/layers.md says how to read it)."
  echo
  echo '```'
  cat "$out/layers-hourglass2.txt"
  echo '```'
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
