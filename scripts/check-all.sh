#!/usr/bin/env bash
# Runs `harness check` on every check config (configs/check*.yaml): each path the check covers
# (ties in max pooling, momentum and weight decay, both RMSProp variants, host placement, every
# CPU backend option). Entries whose plugin is not built, or whose device is absent, are SKIPPED.
# Usage: scripts/check-all.sh [BUILD_DIR] [harness check options...]; exits non-zero when any
# check failed or mismatched.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
status=0
for config in "$root"/configs/check*.yaml; do
    echo "== $(basename "$config")"
    start=$(date +%s)
    "$build/harness" check "$config" "$@" || status=1
    echo "== $(basename "$config"): $(($(date +%s) - start)) s"
done
exit "$status"
