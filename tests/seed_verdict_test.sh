#!/usr/bin/env bash
# scripts/seed-verdict.py on a real report of scripts/explain-seed.sh (one round of
# configs/seed-small.yaml, tests/data/seed_verdict): each figure of the verdict is the report's.
set -euo pipefail
script=$1
data=$2
out=$(python3 "$script" "$data")
echo "$out"
status=0
# The backticks are Markdown's, not command substitutions.
# shellcheck disable=SC2016
for expected in \
  '**1.599x [1.563, 1.635]** the time of the same model on LibTorch (`libtorch-cpu`, 2063 ms)' \
  '(`tensorflow-fused`, batchnorm: unfused → fused): real: it saves 9.5% of the step [5.1%, 13.7%].' \
  '(`tensorflow-device`, placement: host → device): no significant difference (+1.9% [-0.2%, +4.0%]).' \
  '`tensorflow-seed` runs 2879 operations in its forward pass and 6449 in its backward pass (with fused batch norm, 1912 and 722), `libtorch-cpu` 356 and 554' \
  'The executor'"'"'s time between TensorFlow'"'"'s operations is 76 ms, 2.1% of its traced step' \
  'convolution backward 1807 ms against 969; batch norm 1039 ms against 252' \
  'It would have printed 5821 ms per step for `tensorflow-seed` (CPU/wall 1.76)' \
  'Real savings on today'"'"'s TensorFlow on this CPU: fused batch norm, oneDNN'"'"'s kernels. No saving here: no feed_dict, XLA.'; do
  if [[ $out != *"$expected"* ]]; then
    echo "FAIL: the verdict lacks: $expected"
    status=1
  fi
done
exit "$status"
