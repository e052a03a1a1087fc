#!/usr/bin/env bash
# What the progress line costs a timed step: the same entries run with stderr a terminal
# (script(1)'s pseudo-terminal, the line redrawn after every step) and with stderr a pipe (no
# line), the two alternating in ROUNDS rounds, the first mode swapped each round; then each
# backend's median per round and mode, the ratio terminal/pipe per round and the median of those
# ratios. A ratio within the rounds' spread of 1 is no cost.
#
#   scripts/progress-cost.sh [CONFIG] [BACKENDS]   (default configs/seed-small.yaml and
#                                                  tensorflow-onednn,libtorch-cpu; ROUNDS=3)
#   ITERATIONS=5 WARMUP=1 ...                      (fewer steps than the config's)
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/seed-small.yaml}
backends=${2:-tensorflow-onednn,libtorch-cpu}
rounds=${ROUNDS:-3}
harness=${BUILD_DIR:-build}/harness
[[ -x $harness ]] || { echo "progress-cost: $harness not built" >&2; exit 2; }
command -v script >/dev/null || { echo "progress-cost: script(1) (util-linux) not found" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
steps=()
[[ -n ${ITERATIONS:-} ]] && steps+=(--iterations "$ITERATIONS")
[[ -n ${WARMUP:-} ]] && steps+=(--warmup "$WARMUP")
run() {  # MODE ROUND
  local args=("$harness" run "$config" --rounds 1 --backends "$backends" "${steps[@]}"
    --output "$out/$1-$2.csv")
  if [[ $1 == terminal ]]; then
    TERM=xterm script -qec "$(printf '%q ' "${args[@]}")" /dev/null >"$out/$1-$2.log"
  else
    "${args[@]}" 2>&1 | cat >"$out/$1-$2.log"
  fi
}
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then order=(terminal pipe); else order=(pipe terminal); fi
  for mode in "${order[@]}"; do
    echo "== round $round of $rounds: stderr a $mode"
    run "$mode" "$round"
  done
done
grep -q $'\e\[K' "$out"/terminal-1.log || { echo "progress-cost: no progress line drawn" >&2; exit 1; }
if grep -q $'\e\[K' "$out"/pipe-1.log; then echo "progress-cost: a line drawn in a pipe" >&2; exit 1; fi
python3 - "$out" "$rounds" <<'PY'
import csv, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
medians = {}
for mode in ("terminal", "pipe"):
    for r in range(1, rounds + 1):
        with open(f"{out}/{mode}-{r}.csv", newline="") as f:
            for row in csv.DictReader(f):
                if row["status"] == "ok":
                    medians.setdefault(row["backend"], {}).setdefault(mode, []).append(
                        float(row["median_ms"]))
print(f"{'backend':<20} {'terminal ms (per round)':<32} {'pipe ms (per round)':<32} ratio per round  median ratio")
for backend, m in medians.items():
    ratios = [t / p for t, p in zip(m["terminal"], m["pipe"])]
    fmt = lambda xs: " ".join(f"{x:.1f}" for x in xs)
    print(f"{backend:<20} {fmt(m['terminal']):<32} {fmt(m['pipe']):<32} "
          f"{' '.join(f'{x:.3f}' for x in ratios):<16} {statistics.median(ratios):.3f}")
PY
