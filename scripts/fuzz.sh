#!/usr/bin/env bash
# Fuzzes what reads untrusted files (fuzz/): the config loader and `harness report`'s readers,
# each for SECONDS, with libFuzzer, ASan and UBSan, from a seed corpus of the repository's own
# configs and results. A crash, a leak, undefined behaviour, a hang of more than 20 s or an
# exception of the wrong type stops a fuzzer: its input is kept in build-fuzz/artifacts/ and the
# script exits 1 (turn it into a regression test). Exits 0 when both ran their time out.
#
#   scripts/fuzz.sh [SECONDS]     (default 60 per target; .ci/run uses the default)
#   JOBS=2 scripts/fuzz.sh 3600   (both targets at once)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${HB_FUZZ_BUILD:-build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
mkdir -p "$build"
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHB_FUZZ=ON -DHB_BUILD_TESTS=OFF -DHB_DEBIAN_PLUGINS=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 2; }
cmake --build "$build" --target config_fuzz results_fuzz
mkdir -p "$build/artifacts"
seed() {  # seed TARGET FILES...: the corpus folder, filled once with copies of the given files
  local dir="$build/corpus/$1" file
  shift
  mkdir -p "$dir"
  if [[ -z $(ls -A "$dir") ]]; then
    for file in "$@"; do cp "$file" "$dir/${file//\//_}"; done  # results/cpu/x.json: results_cpu_x.json
  fi
  echo "$dir"
}
config_corpus=$(seed config configs/*.yaml tests/data/*.yaml tests/data/configs/*.yaml)
results_corpus=$(seed results results/*/*.csv results/*/*.json)
run() {  # run TARGET CORPUS
  echo "== $1 for $seconds s (corpus $2)"
  "$build/$1" "$2" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -artifact_prefix="$build/artifacts/$1-" -print_final_stats=1 2>"$build/$1.log" ||
    { tail -n 40 "$build/$1.log" >&2; return 1; }
  grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)|cov: ' "$build/$1.log" | tail -n 4
}
status=0
if [[ ${JOBS:-1} -ge 2 ]]; then
  run config_fuzz "$config_corpus" & first=$!
  run results_fuzz "$results_corpus" || status=1
  wait "$first" || status=1
else
  run config_fuzz "$config_corpus" || status=1
  run results_fuzz "$results_corpus" || status=1
fi
exit "$status"
