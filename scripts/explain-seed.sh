#!/usr/bin/env bash
# The seed's question, "why is the TensorFlow port slower than the Torch original?", on this
# machine: configs/seed.yaml (the seed's TensorFlow model; `tensorflow-seed` run as the seed ran
# it, one entry per idea of the answer that changes one thing from it, and the same model on
# libtorch-cpu and onednn) in interleaved rounds, every entry's steps profiled and traced after its
# timed ones, then `harness report` against libtorch-cpu: what each change costs, where each
# backend's step goes by operation kind and by layer, the operations each runs, its CPU time over
# its wall time, and charts. In every round the Torch original's model (configs/hourglass8.yaml)
# runs on libtorch-cpu too, which prices the two models' differences on one backend.
# scripts/explain-cpu.sh does the work.
#
#   scripts/explain-seed.sh [OUT_DIR]     (default results/seed; ROUNDS=3 by default)
#   CONFIG=configs/seed-small.yaml ROUNDS=1 ITERATIONS=2 WARMUP=1 scripts/explain-seed.sh /tmp/seed
#                                         (the 2-stack twin, a quick try)
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${CONFIG:-configs/seed.yaml} BASELINE=libtorch-cpu STEM=seed ROUNDS=${ROUNDS:-3} \
  PROFILE_STEPS=${PROFILE_STEPS:-3} ALSO=configs/hourglass8.yaml ALSO_BACKENDS=libtorch-cpu \
  exec scripts/explain-cpu.sh "${1:-results/seed}"
