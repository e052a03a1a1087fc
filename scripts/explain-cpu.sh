#!/usr/bin/env bash
# Why libtorch-cpu trails onednn on this machine, in one run: configs/cpu-ablation.yaml (each
# backend's base and the entries that change one thing from it) with every entry's steps profiled
# and traced, then `harness report --explain --by kind --by layer --charts`. Checks that each
# profiled backend's operations account for its step: their sum within 5% of the profiled step's
# wall time.
#
#   scripts/explain-cpu.sh [OUT_DIR]    (default results/cpu-explain; needs ./build)
#   ROUNDS=3 scripts/explain-cpu.sh     (several rounds: the report merges them)
#   CONFIG=configs/seed.yaml BASELINE=libtorch-cpu STEM=seed scripts/explain-cpu.sh results/seed
#                                       (another ablation config; scripts/explain-seed.sh)
#   ITERATIONS=3 WARMUP=1 ...           (fewer steps than the config's, for a quick try)
#   ROUNDS=0 ...                        (no new round: the report again, from the CSVs there)
#   PROFILE_STEPS=3 ...                 (profiled steps per entry; harness run's default otherwise)
#   ALSO=configs/hourglass8.yaml ALSO_BACKENDS=libtorch-cpu ...
#                                       (in every round, those entries of another config too,
#                                       timed only: the report's --explain prices the configs'
#                                       difference on each backend both run)
#
# Writes OUT_DIR/<STEM>-round<N>.csv (STEM: ablation; with JSON sidecars), with ALSO
# OUT_DIR/<STEM>-also-round<N>.csv, OUT_DIR/traces/*.json (load them in ui.perfetto.dev),
# OUT_DIR/charts/ and OUT_DIR/report.md. Exits 1 when a backend's operations miss more than 5% of
# its step, or a backend failed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
out=${1:-results/cpu-explain}
rounds=${ROUNDS:-1}
config=${CONFIG:-configs/cpu-ablation.yaml}
baseline=${BASELINE:-onednn}
stem=${STEM:-ablation}
steps=()
[[ -n ${ITERATIONS:-} ]] && steps+=(--iterations "$ITERATIONS")
[[ -n ${WARMUP:-} ]] && steps+=(--warmup "$WARMUP")
profile=()
[[ -n ${PROFILE_STEPS:-} ]] && profile+=(--profile-steps "$PROFILE_STEPS")
also=${ALSO:-}
also_backends=()
[[ -n ${ALSO_BACKENDS:-} ]] && also_backends+=(--backends "$ALSO_BACKENDS")
harness="$build/harness"
[[ -x $harness ]] || { echo "explain-cpu: $harness not built (cmake --build $build)" >&2; exit 2; }
mkdir -p "$out"
(( rounds > 0 )) && rm -f "$out/$stem"-round*.csv "$out/$stem"-round*.json "$out/$stem"-also-round*.{csv,json}
status=0
csvs=()
if (( rounds == 0 )); then
  csvs=("$out/$stem"-round*.csv)
  [[ -e ${csvs[0]} ]] || { echo "explain-cpu: ROUNDS=0 and no $out/$stem-round*.csv to report" >&2; exit 2; }
fi
for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds: $config, profiled and traced"
  "$harness" run "$config" --rounds 1 "${steps[@]}" "${profile[@]}" --trace "$out/traces" \
    --output "$out/$stem-round$round.csv" || status=1
  csvs+=("$out/$stem-round$round.csv")
  if [[ -n $also ]]; then
    echo "== round $round of $rounds: $also ${also_backends[*]}, timed"
    "$harness" run "$also" --rounds 1 "${also_backends[@]}" "${steps[@]}" \
      --output "$out/$stem-also-round$round.csv" || status=1
  fi
done
[[ -n $also ]] && compgen -G "$out/$stem-also-round*.csv" >/dev/null && csvs+=("$out/$stem"-also-round*.csv)
"$harness" report "${csvs[@]}" --baseline "$baseline" --explain --by kind --by layer \
  --charts "$out/charts" --output "$out/report.md"
# The share row of the --by kind table, against its header's backends.
shares=$(awk -F'|' '
  $2 ~ /operation kind/ { n = NF; for (i = 3; i < NF; ++i) { name[i] = $i; gsub(/ /, "", name[i]) } }
  $2 ~ /share of the step/ {
    for (i = 3; i < NF; ++i) { v = $i; gsub(/[ %]/, "", v); if (v != "" && name[i] !~ /−/) print name[i], v }
  }' "$out/report.md")
echo
echo "operations' share of each profiled step:"
while read -r backend share; do
  verdict=ok
  if awk -v s="$share" 'BEGIN { exit !(s < 95 || s > 105) }'; then verdict="MISSES MORE THAN 5%"; status=1; fi
  printf '  %-28s %6s%%  %s\n' "$backend" "$share" "$verdict"
done <<<"$shares"
echo
echo "report: $out/report.md; traces: $out/traces/"
exit "$status"
