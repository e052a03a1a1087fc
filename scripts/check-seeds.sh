#!/usr/bin/env bash
# harness check on one config with data.seed set to each of a range, one line per seed: each
# backend's verdict and its worst quantity against its tolerance (and how many members of the
# rounding-noise ensemble it took, where more than the first six), and the widest tolerance against
# the ensemble's spread. The check's verdict must not depend on which seed a config
# happens to use (docs/conformance.md).
#
#   scripts/check-seeds.sh [CONFIG] [FIRST] [LAST] [-- harness check options...]
#   e.g. scripts/check-seeds.sh configs/check.yaml 1 12 -- --backends onednn,libtorch-cpu
# KEEP=DIR keeps each seed's `harness check --json` as DIR/seed-N.json.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/check.yaml}
first=${2:-1}
last=${3:-12}
shift $(($# < 3 ? $# : 3))
[[ "${1:-}" == "--" ]] && shift
harness=${HARNESS:-build/harness}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for seed in $(seq "$first" "$last"); do
  copy="$work/$(basename "$config")"
  # The same config with only data.seed changed (the line under `data:`).
  awk -v seed="$seed" '
    /^data:/ { in_data = 1 }
    /^[^ #]/ && !/^data:/ { in_data = 0 }
    in_data && /^  seed:/ { print "  seed: " seed; next }
    { print }' "$config" > "$copy"
  grep -q "^  seed: $seed\$" "$copy" || { echo "check-seeds: $config has no data.seed" >&2; exit 2; }
  status=0
  "$harness" check "$copy" --json "$@" > "$work/check.json" 2> "$work/check.log" || status=$?
  if [[ $status -gt 1 ]] || ! [[ -s "$work/check.json" ]]; then
    echo "seed $seed: harness check exited $status"; tail -3 "$work/check.log"; continue
  fi
  if [[ -n "${KEEP:-}" ]]; then mkdir -p "$KEEP" && cp "$work/check.json" "$KEEP/seed-$seed.json"; fi
  python3 - "$seed" "$work/check.json" <<'PY'
import json, sys
seed, path = sys.argv[1], sys.argv[2]
j = json.load(open(path))
if j["baseline_problem"]:
    print(f"seed {seed}: baseline failed: {j['baseline_problem']}")
    sys.exit()
cells = []
# How wide each tolerance is against what the ensemble shows (its spread, or the format's
# resolution where that is finer): the widest, over every quantity the ensemble measures.
widest = max((d["tolerance"] / max(d["spread"], d.get("resolution", 0))
              for b in j["backends"] for d in b.get("differences", [])
              if not d["quantity"].startswith("update ") and max(d["spread"], d.get("resolution", 0)) > 0),
             default=0)
for b in j["backends"]:
    w = b.get("worst_relative")
    cell = f"{b['backend']} {b['verdict']}"
    if w:
        cell += f" {w.get('member_relative', w['relative']) / w['tolerance']:.2g}"
        if b["verdict"] == "MISMATCH":
            cell += f" ({w['quantity']} {w['relative']:.3g} > {w['tolerance']:.3g})"
    if b.get("ensemble_members", 0) > 6:
        cell += f" ({b['ensemble_members']} members)"
    undetermined = sum(1 for d in b.get("differences", []) if not d.get("determined", True))
    if undetermined:
        cell += f" [{undetermined} undetermined]"
    cells.append(cell)
print(f"seed {seed}: " + "; ".join(cells) + f"; widest tolerance {widest:.3g}x the spread")
PY
done
