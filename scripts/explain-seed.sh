#!/usr/bin/env bash
# The seed's question, "why is the TensorFlow port slower than the Torch original?", on this
# machine: configs/seed.yaml (the seed's TensorFlow model; `tensorflow-seed` run as the seed ran
# it, one entry per idea of the answer that changes one thing from it, and the same model on
# libtorch-cpu and onednn) in interleaved rounds, every entry's steps profiled and traced after its
# timed ones, then `harness report` against libtorch-cpu: what each change costs, where each
# backend's step goes by operation kind and by layer, the operations each runs, its CPU time over
# its wall time, and charts. In every round the Torch original's model (configs/hourglass8.yaml)
# runs on libtorch-cpu too, which prices the two models' differences on one backend.
# scripts/explain-cpu.sh does the work; scripts/seed-verdict.py opens the report with the verdict
# in words: the gap on TensorFlow's own kernels, as the seed ran it, and the gap with TensorFlow
# as it runs on this machine with nothing set (`tensorflow-default`).
#
# Before the rounds, `harness check CONFIG --steps 1` writes OUT_DIR/check.txt: a timing counts
# only for a backend that computes the same step (docs/conformance.md).
#
#   scripts/explain-seed.sh [OUT_DIR]     (default results/seed; ROUNDS=3 by default; ROUNDS=0:
#                                         the report again from the rounds already there)
#   CONFIG=configs/seed-small.yaml ROUNDS=1 ITERATIONS=2 WARMUP=1 scripts/explain-seed.sh /tmp/seed
#                                         (the 2-stack twin, a quick try)
set -euo pipefail
cd "$(dirname "$0")/.."
# `tensorflow-default` is TensorFlow as it loads with nothing set; the other entries set it.
unset TF_ENABLE_ONEDNN_OPTS
out=${1:-results/seed}
config=${CONFIG:-configs/seed.yaml}
status=0
if [[ "${ROUNDS:-3}" != 0 ]]; then
  mkdir -p "$out"
  "${BUILD_DIR:-build}/harness" check "$config" --steps 1 >"$out/check.txt" || status=$?
  cat "$out/check.txt"
  [[ $status -le 1 ]] || exit "$status"
fi
# The Torch original's entry times as many steps as the seed's config (configs/seed.yaml's run).
CONFIG=$config BASELINE=libtorch-cpu STEM=seed ROUNDS=${ROUNDS:-3} \
  WARMUP=${WARMUP:-2} ITERATIONS=${ITERATIONS:-6} \
  PROFILE_STEPS=${PROFILE_STEPS:-3} ALSO=configs/hourglass8.yaml ALSO_BACKENDS=libtorch-cpu \
  scripts/explain-cpu.sh "$out" || status=$?
# The traces, compressed to publish beside the page (ui.perfetto.dev opens them as they are).
if compgen -G "$out/traces/*.json" >/dev/null; then
  mkdir -p "$out/perfetto"
  rm -f "$out"/perfetto/*.json.gz
  for trace in "$out"/traces/*.json; do gzip -9 -c "$trace" >"$out/perfetto/$(basename "$trace").gz"; done
fi
# The page opens with the verdict in words, from the report's figures (scripts/seed-verdict.py).
if verdict=$(python3 scripts/seed-verdict.py "$out"); then
  { printf '%s\n\n' "${verdict#$'\n'}"; cat "$out/report.md"; } >"$out/report.md.new"
  mv "$out/report.md.new" "$out/report.md"
else
  status=1
fi
exit "$status"
