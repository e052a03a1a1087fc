#!/usr/bin/env bash
# scripts/seed-verdict.py on reports of scripts/explain-seed.sh (tests/data/seed_verdict), each
# figure of the verdict the report's:
#   no-default   one round of configs/seed-small.yaml from before it had `tensorflow-default`
#   default-on   results/seed's rounds (report.md, the CSVs, the sidecars' manifests) on a CPU
#                where TensorFlow runs oneDNN's kernels by default
#   default-off  no-default with the `tensorflow-default` a CPU without those features runs:
#                the `tensorflow-seed` row under its name, its manifest saying Eigen ran and why
set -euo pipefail
script=$1
data=$2
status=0
expect() {  # CASE EXPECTED...
  local case=$1 out
  shift
  out=$(python3 "$script" "$data/$case")
  for expected in "$@"; do
    if [[ $out != *"$expected"* ]]; then
      echo "FAIL ($case): the verdict lacks: $expected"
      echo "$out"
      status=1
    fi
  done
}
# The backticks are Markdown's, not command substitutions.
# shellcheck disable=SC2016
expect no-default \
  '**1.599x [1.563, 1.635]** the time of the same model on LibTorch (`libtorch-cpu`, 2063 ms)' \
  '(`tensorflow-fused`, batchnorm: unfused → fused): real: it saves 9.5% of the step [5.1%, 13.7%].' \
  '(`tensorflow-device`, placement: host → device): no significant difference (+1.9% [-0.2%, +4.0%]).' \
  '`tensorflow-seed` runs 2879 operations in its forward pass and 6449 in its backward pass (with fused batch norm, 1912 and 722), `libtorch-cpu` 356 and 554' \
  'The executor'"'"'s time between TensorFlow'"'"'s operations is 76 ms, 2.1% of its traced step' \
  'convolution backward 1807 ms against 969; batch norm 1039 ms against 252' \
  'It would have printed 5821 ms per step for `tensorflow-seed` (CPU/wall 1.76)' \
  'Real savings on today'"'"'s TensorFlow on this CPU: fused batch norm, oneDNN'"'"'s kernels. No saving here: no feed_dict, XLA.'
# shellcheck disable=SC2016
expect default-off \
  '- **On TensorFlow'"'"'s own kernels, as the seed ran it** (`tensorflow-seed`; 2017'"'"'s situation, when TensorFlow had no oneDNN kernels): 3298 ms per step, **1.599x [1.563, 1.635]**.' \
  '- **As TensorFlow 2.21.0 runs it here with nothing set** (`tensorflow-default`: the same port, TensorFlow'"'"'s own kernels): 3298 ms per step, **1.599x [1.563, 1.635]**.' \
  'This machine'"'"'s default is TensorFlow'"'"'s own kernels: on Linux x86, TensorFlow turns its oneDNN kernels on when the CPU has a neural-network feature' \
  'and this CPU has none of them (avx512_vnni, avx512_bf16, avx_vnni, amx_tile, amx_int8, amx_bf16). Here the seed'"'"'s gap is the one a user gets today.' \
  'Real savings on today'"'"'s TensorFlow on this CPU: fused batch norm, oneDNN'"'"'s kernels. No saving here: no feed_dict, XLA.'
# shellcheck disable=SC2016
expect default-on \
  '- **On TensorFlow'"'"'s own kernels, as the seed ran it** (`tensorflow-seed`; 2017'"'"'s situation, when TensorFlow had no oneDNN kernels): 9852 ms per step, **1.376x [1.316, 1.436]**.' \
  '- **As TensorFlow 2.21.0 runs it here with nothing set** (`tensorflow-default`: the same port, oneDNN'"'"'s kernels): 7394 ms per step, **1.033x [0.979, 1.079]**.' \
  'This machine'"'"'s default is oneDNN'"'"'s kernels: on Linux x86, TensorFlow turns its oneDNN kernels on when the CPU has a neural-network feature (AVX-512 VNNI or BF16, AVX-VNNI, AMX), and this CPU has avx512_vnni, avx512_bf16. Who installs TensorFlow today and runs the seed'"'"'s port here gets the second gap; the first reconstructs 2017.' \
  '- **TensorFlow'"'"'s default** on this machine, nothing set (`tensorflow-default`, onednn: false → (default)): real: it saves 24.9% of the step [18.8%, 31.1%].' \
  'Real savings on today'"'"'s TensorFlow on this CPU: XLA, oneDNN'"'"'s kernels. No saving here: fused batch norm, no feed_dict.'
exit "$status"
