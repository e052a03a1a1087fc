#!/usr/bin/env bash
# The GPU run, in one call on a CUDA machine (docs/gpu.md): builds the GPU plugins against the
# LibTorch and cuDNN found there, checks them against the CPU reference (configs/check.yaml, then
# every option on the paths of check-tiny, -momentum, -tensorflow and -ties),
# runs the seed experiment (configs/hourglass8.yaml) on the GPU backends, times eager PyTorch on
# the same problem (scripts/pytorch-peer.py), runs the GPU plugins' test programs, then profiles
# a few steps of the GPU backends (harness run --profile, harness report --by kind). Every
# stage has a time limit, and the whole fits in 8 minutes even when one hangs; the summary is
# rewritten after each stage, so what finished comes back.
#
#   scripts/gpu-check.sh             on the CUDA machine; the bundle (scripts/gpu-bundle.sh, run on
#                                    the build machine) must have travelled with the tree
#   scripts/gpu-check.sh --rehearse  here, without a GPU: the same stages on the CPU backends
#
# Environment: OUT (default gpu-out/) receives at most 6 files; HB_BUNDLE (default gpu-bundle);
# HB_STAGES (default "build check paths parallel experiment peer tests profile"); HB_ROUNDS
# (default 1) repeats the
# experiment and its peers in interleaved rounds; HB_GPU_PLUGINS, a folder of plugins built
# by an earlier run, replaces the build stage; PYTHON is the one with torch (default python3, in a
# rehearsal scripts/setup.sh's virtual environment);
# HB_LIMIT_SCALE multiplies every stage's time limit (default 1, 3 for a rehearsal on a small
# machine).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

mode=gpu
case "${1:-}" in
  "") ;;
  --rehearse) mode=rehearsal ;;
  -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu-check: unknown argument '$1' (expected --rehearse or nothing)" >&2; exit 2 ;;
esac

bundle=${HB_BUNDLE:-gpu-bundle}
out=${OUT:-gpu-out}
stages=${HB_STAGES:-build check paths parallel experiment peer tests profile}
rounds=${HB_ROUNDS:-1}
python=${PYTHON:-python3}
if [ "$mode" = rehearsal ] && [ -z "${PYTHON:-}" ]; then
  venv=$(bash scripts/setup.sh --pypi-prefix)  # setup.sh's PyPI torch, as the build uses
  [ -x "$venv/bin/python3" ] && python="$venv/bin/python3"
fi
harness="$bundle/harness"
for f in harness cudnn_gpu_test libtorch_test plugins/hb_reference.so; do
  if [ ! -e "$bundle/$f" ]; then
    echo "gpu-check: $bundle/$f is missing. On the build machine run scripts/gpu-bundle.sh," \
      "then call the device with carry [\"$bundle\"]: the bundle is git-ignored and travels" \
      "only when the call names it." >&2
    exit 2
  fi
done
mkdir -p "$out"
case ${HB_ROUNDS:-1} in
  '' | *[!0-9]* | 0) echo "gpu-check: HB_ROUNDS must be a positive number, not '${HB_ROUNDS}'" >&2; exit 2 ;;
esac
if [ -n "$(ls -A "$out")" ]; then
  echo "gpu-check: $out is not empty; it receives this run's files only" >&2
  exit 2
fi

limit_scale=${HB_LIMIT_SCALE:-$([ "$mode" = gpu ] && echo 1 || echo 3)}
if [ "$mode" = gpu ]; then
  check_backends=libtorch-cuda,cudnn,cudnn-tf32,cudnn-bf16
  # Every CUDA entry of the path configs (configs/check-tiny.yaml's list).
  paths_backends=libtorch-cuda,libtorch-cuda-channels-last,libtorch-cuda-graphs,libtorch-cuda-host
  paths_backends+=,cudnn,cudnn-nhwc-fused,cudnn-legacy,cudnn-graphs,cudnn-host
  parallel_backends=cudnn,libtorch-cuda  # NCCL, one rank (no mpirun there: two are skipped)
  run_backends=libtorch-cuda,libtorch-cuda-graphs,cudnn,cudnn-graphs,cudnn-tf32-graphs,cudnn-bf16-graphs,cudnn-legacy
  run_config=configs/hourglass8.yaml
  baseline=cudnn
  peers="libtorch-cuda cudnn-bf16-graphs:--bf16"
  profile_backends=libtorch-cuda,cudnn,cudnn-bf16-graphs
  device=cuda
else
  check_backends=libtorch-cpu
  paths_backends=libtorch-cpu,libtorch-cpu-channels-last
  parallel_backends=libtorch-cpu
  run_backends=libtorch-cpu
  run_config=configs/hourglass2.yaml
  baseline=libtorch-cpu
  peers=libtorch-cpu
  profile_backends=libtorch-cpu
  device=cpu
fi
# The files that come back, 6 at most.
summary="$out/summary.md"
log="$out/log.txt"
check_out="$out/check.txt"
csv="$out/$(basename "$run_config" .yaml)-$mode.csv"  # and its .json sidecar
plugins_archive="$out/gpu-plugins.tar.gz"
build=${HB_GPU_BUILD:-build-gpu}
rm -rf "$build/rounds" && mkdir -p "$build/rounds"
stage_output=$(mktemp)
trap 'rm -f "$stage_output"' EXIT
started=$(date +%s)
deadline=$((started + 470 * limit_scale))
stage_rows="" report="" peer="" test_results="" round_medians="" attribution="" failed=()

write_summary() {
  {
    echo "# scripts/gpu-check.sh ($mode), $(date -u +%FT%TZ)"
    echo
    echo "$environment"
    echo
    echo "| stage | result | took | limit |"
    echo "| --- | --- | --- | --- |"
    printf '%b' "$stage_rows"
    echo
    echo "whole run: $(($(date +%s) - started)) s"
    if [ -s "$check_out" ]; then
      printf '\n## Conformance (baseline reference on the CPU)\n\n```\n'
      cat "$check_out"
      echo '```'
    fi
    if [ -n "$report" ]; then
      printf '\n## Seed experiment (%s)\n\n%s\n' "$run_config" "$report"
    fi
    if [ -n "$peer" ]; then
      printf '\nThe same problem in eager PyTorch (scripts/pytorch-peer.py):\n\n%s' "$peer"
    fi
    if [ -n "$round_medians" ]; then
      printf '\n## Over %s interleaved rounds (rounds.tar.gz holds every file)\n\n%s\n' \
        "$rounds" "$round_medians"
    fi
    if [ -n "$test_results" ]; then
      printf '\n## Test programs\n\n%s\n%s\n%s\n' '```' "$test_results" '```'
    fi
    if [ -n "$attribution" ]; then
      printf '\n## Profiled steps (%s)\n%s\n' "$profile_backends" "$attribution"
    fi
  } >"$summary"
}

# stage NAME LIMIT_S COMMAND...: runs COMMAND (a program, or a function exported with export -f)
# with a time limit, its output into the log (and the log's end on the screen when it fails),
# and records the outcome in the summary.
stage() {
  local name=$1 limit=$(($2 * limit_scale))
  shift 2
  local t0 rc result
  t0=$(date +%s)
  if [ $((deadline - t0)) -lt "$limit" ]; then limit=$((deadline - t0)); fi
  if [ "$limit" -lt 5 ]; then
    stage_rows+="| $name | not run: the run's time is used up | 0 s | |\n"
    failed+=("$name")
    write_summary
    return 1
  fi
  printf '\n== %s (limit %s s)\n' "$name" "$limit" | tee -a "$log"
  timeout --kill-after=5 "$limit" bash -c '"$@"' _ "$@" >"$stage_output" 2>&1
  rc=$?
  cat "$stage_output" >>"$log"
  case $rc in
    0) result=ok ;;
    124 | 137) result="timed out" ;;
    *) result="failed ($rc)" ;;
  esac
  stage_rows+="| $name | $result | $(($(date +%s) - t0)) s | $limit s |\n"
  [ "$rc" -eq 0 ] || failed+=("$name")
  echo "-- $name: $result in $(($(date +%s) - t0)) s"
  [ "$rc" -eq 0 ] || tail -n 15 "$stage_output"
  write_summary
  return "$rc"
}

wants() { [[ " $stages " == *" $1 "* ]]; }

environment=$(
  grep PRETTY_NAME /etc/os-release 2>/dev/null | cut -d= -f2 | tr -d '"'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
    echo "no GPU (nvidia-smi: none)"
  timeout 60 "$python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>/dev/null ||
    echo "no PyTorch for $python"
  echo "$(cmake --version | head -n 1), $(c++ --version 2>&1 | head -n 1)," \
    "nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
)
environment="- ${environment//$'\n'/$'\n'- }"
: >"$log"
write_summary

configure_and_build() {
  local torch_prefix cudnn_root
  torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  # The wheel's cuDNN, headers and library together, so a system libcudnn cannot pair with the
  # wheel's headers.
  cudnn_root=$("$python" -c 'import nvidia.cudnn as c; print(list(c.__path__)[0])' 2>/dev/null)
  local cudnn_args=()
  if [ -n "$cudnn_root" ] && [ -f "$cudnn_root/include/cudnn.h" ]; then
    cudnn_args=(-DCUDNN_INCLUDE_DIR="$cudnn_root/include"
      -DCUDNN_LIBRARY="$cudnn_root/lib/libcudnn.so.9")
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHB_PLUGINS_ONLY=ON \
    -DCMAKE_PREFIX_PATH="$torch_prefix" "${cudnn_args[@]}" -DCMAKE_CUDA_ARCHITECTURES=90 ||
    return
  # -k 0: one plugin failing to compile does not stop the other.
  cmake --build "$build" -j"$(nproc)" --target hb_cudnn hb_libtorch -- -k 0
  local rc=$?
  ls -l "$build/plugins"
  return $rc
}
export -f configure_and_build
export python build

if [ -n "${HB_GPU_PLUGINS:-}" ]; then
  plugins=$HB_GPU_PLUGINS
  stage_rows+="| build | plugins from $plugins | 0 s | |\n"
elif wants build; then
  plugins="$build/plugins"
  stage build 150 configure_and_build
  (cd "$build" && tar -czf "$OLDPWD/$plugins_archive" plugins/hb_cudnn.so plugins/hb_libtorch.so 2>/dev/null)
else
  plugins="$build/plugins"
fi
export HARNESS_PLUGIN_PATH="$PWD/$plugins:$PWD/$bundle/plugins"
torch_lib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
cudnn_lib=$("$python" -c 'import nvidia.cudnn as c; print(list(c.__path__)[0] + "/lib")' 2>/dev/null)
nccl_lib=$("$python" -c 'import nvidia.nccl as c; print(list(c.__path__)[0] + "/lib")' 2>/dev/null)
cudart_lib=$("$python" -c 'import nvidia.cuda_runtime as c; print(list(c.__path__)[0] + "/lib")' 2>/dev/null)
gpu_libs="${cudnn_lib:+$cudnn_lib:}${nccl_lib:+$nccl_lib:}${cudart_lib:+$cudart_lib:}"
export LD_LIBRARY_PATH="$gpu_libs${torch_lib:+$torch_lib:}$PWD/$bundle/lib:${LD_LIBRARY_PATH:-}"
"$harness" list >>"$log" 2>&1

if wants check; then
  stage "check ($check_backends)" 75 "$harness" check configs/check.yaml --backends "$check_backends"
  cp "$stage_output" "$check_out"
  write_summary
fi

# The paths configs/check.yaml leaves out (docs/conformance.md "Check configs: every path"): ties
# in max pooling, momentum and weight decay, TensorFlow's RMSProp, batch norm's eps beside the
# batch variances, each backend option.
check_paths() {
  local config status=0
  for config in configs/check-tiny.yaml configs/check-momentum.yaml configs/check-tensorflow.yaml \
    configs/check-ties.yaml configs/check-bn-eps.yaml; do
    "$harness" check "$config" --backends "$paths_backends" || status=1
  done
  return "$status"
}
export -f check_paths
export harness paths_backends
if wants paths; then
  stage "check paths ($paths_backends)" 90 check_paths
  grep -v -E '^(baseline |[a-z0-9-]+: [0-9]+ steps$)' "$stage_output" >>"$check_out"
  write_summary
fi

# Data-parallel steps (docs/parallel.md): each rank's gradients and state against the backend's
# one-process step, with NCCL on the GPU (MPI in a rehearsal).
if wants parallel; then
  stage "data-parallel check ($parallel_backends)" 60 "$harness" check configs/check-parallel.yaml \
    --backends "$parallel_backends"
fi

# The seed experiment, then eager PyTorch on the same problem (the libtorch backend must be as
# fast as PyTorch used directly), in HB_ROUNDS interleaved rounds. Each peer is
# "backend[:peer-flag]", the backend whose first loss it must reproduce.
for round in $(seq 1 "$rounds"); do
  round_csv=$csv
  [ "$round" -eq 1 ] || round_csv="$build/rounds/round-$round.csv"
  [ "$rounds" -eq 1 ] && label="" || label=", round $round"
  if wants experiment; then
    stage "seed experiment ($run_backends$label)" 120 \
      "$harness" run "$run_config" --rounds 1 --backends "$run_backends" --warmup 2 --iterations 10 \
      --output "$round_csv" --dump "$build/dump"
    if [ "$round" -eq 1 ] && [ -s "$csv" ]; then
      report=$("$harness" report "$csv" --baseline "$baseline" 2>>"$log")
      write_summary
    fi
  fi
  if wants peer && [ -s "${round_csv%.csv}.json" ]; then
    for p in $peers; do
      of=${p%%:*} flag=${p#*:}
      [ "$flag" != "$p" ] || flag=""
      expected=$("$python" -c 'import json, sys
runs = [r for r in json.load(open(sys.argv[1]))["runs"] if r["backend"] == sys.argv[2]]
print(runs[0]["first_loss"] if runs and runs[0]["status"] == "ok" else "")' "${round_csv%.csv}.json" "$of")
      stage "eager PyTorch $flag on $device (peer of $of$label)" 45 "$python" \
        scripts/pytorch-peer.py "$build/dump" --device "$device" ${flag:+"$flag"} \
        --threads "$(nproc)" --warmup 2 --iterations 10 ${expected:+--expect-loss "$expected"} \
        --json "${round_csv%.csv}-peer-$of.json"
      peer+="- $(grep '^pytorch-' "$stage_output") (peer of $of$label)"$'\n'
      write_summary
    done
  fi
done
if [ "$rounds" -gt 1 ]; then
  cp "$csv" "${csv%.csv}.json" "$build/rounds/" 2>/dev/null
  cp "${csv%.csv}"-peer-*.json "$build/rounds/" 2>/dev/null && rm -f "${csv%.csv}"-peer-*.json
  # Each backend's and peer's median step over the rounds, with the rounds' range.
  round_medians=$("$python" - "$build/rounds" <<'PY'
import glob, json, os, statistics, sys
medians = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    doc = json.load(open(path))
    if "runs" in doc:
        for r in doc["runs"]:
            if r.get("status") == "ok":
                medians.setdefault(r["backend"], []).append(r["stats"]["median_ms"])
    elif "median_ms" in doc:
        name = "pytorch-eager" + (" bf16" if doc.get("bf16") else "")
        medians.setdefault(name, []).append(doc["median_ms"])
print("| backend | rounds | median of the rounds' medians, ms | range, ms |")
print("| --- | ---: | ---: | --- |")
for name, values in medians.items():
    print(f"| {name} | {len(values)} | {statistics.median(values):.2f} | "
          f"{min(values):.2f} - {max(values):.2f} |")
PY
  )
  tar -czf "$out/rounds.tar.gz" -C "$build" rounds
  write_summary
else
  rm -f "${csv%.csv}"-peer-*.json
fi

if wants tests; then
  stage cudnn_gpu_test 120 env HB_CUDNN_PLUGIN="$PWD/$plugins/hb_cudnn.so" \
    HB_CHECK_CONFIG="$PWD/configs/check.yaml" "$bundle/cudnn_gpu_test" --gtest_brief=1
  test_results+="cudnn_gpu_test:"$'\n'$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$stage_output")$'\n'
  stage "libtorch_test (CUDA)" 45 env HB_LIBTORCH_PLUGIN="$PWD/$plugins/hb_libtorch.so" \
    "$bundle/libtorch_test" --gtest_brief=1 --gtest_filter='LibTorchCuda.*:LibTorchPlugin.*'
  test_results+="libtorch_test:"$'\n'$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$stage_output")
  write_summary
fi

# A few profiled steps of the GPU backends: where each one's step goes (CUDA events per operation).
if wants profile; then
  profile_csv="$build/profile.csv"
  rm -f "$profile_csv" "${profile_csv%.csv}.json"
  stage "profile ($profile_backends)" 90 "$harness" run "$run_config" --rounds 1 \
    --backends "$profile_backends" --warmup 2 --iterations 3 --profile --profile-steps 3 \
    --output "$profile_csv"
  if [ -s "$profile_csv" ]; then
    attribution=$("$harness" report "$profile_csv" --by kind --by layer 2>>"$log")
  fi
fi

write_summary
count=$(find "$out" -type f | wc -l)
echo
cat "$summary"
echo
echo "gpu-check: $count files in $out:" "$out"/*
if [ "$count" -gt 6 ]; then
  echo "gpu-check: more than 6 files in $out" >&2
  exit 1
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "gpu-check: ${#failed[@]} stage(s) did not pass: ${failed[*]}" >&2
  exit 1
fi
