#!/usr/bin/env bash
# On a CUDA machine, in one go (DESIGN §9-10): builds the GPU plugins against the LibTorch and
# cuDNN found there, checks them against the CPU reference on configs/check.yaml, runs the seed
# experiment (configs/hourglass8.yaml) with the GPU backends, and prints a summary.
# The harness itself comes from the Debian build machine: run scripts/gpu-bundle.sh there first.
# Everything it writes goes to $OUT (default gpu-out/).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${HB_BUNDLE:-gpu-bundle}
out=${OUT:-gpu-out}
mkdir -p "$out"
harness="$bundle/harness"
step() { printf '\n== %s\n' "$*"; }

step environment
grep PRETTY_NAME /etc/os-release || true
ldd "$harness" | grep "not found" || echo "the bundled harness finds its libraries"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "no nvidia-smi"
nvcc --version | tail -n 2
python3 - <<'PY' || echo "no PyTorch"
import os, torch
print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())
print("torch cmake prefix:", torch.utils.cmake_prefix_path)
try:
    import nvidia.cudnn as cudnn
    root = list(cudnn.__path__)[0]
    for sub in ("include", "lib"):
        p = os.path.join(root, sub)
        print(p, sorted(os.listdir(p))[:12] if os.path.isdir(p) else "missing")
except ImportError as e:
    print("no nvidia.cudnn wheel:", e)
PY
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
torch_lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
cudnn_root=$(python3 -c 'import nvidia.cudnn as c; print(list(c.__path__)[0])' 2>/dev/null)
[ -x "$harness" ] || { echo "no $harness: run scripts/gpu-bundle.sh on the build machine"; exit 2; }

step build the GPU plugins
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHB_PLUGINS_ONLY=ON \
  -DCMAKE_PREFIX_PATH="$torch_prefix" ${cudnn_root:+-DCUDNN_ROOT="$cudnn_root"} \
  -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/configure.log" 2>&1
grep -E "plugin |Error" "$out/configure.log"
cmake --build build-gpu -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -n 40 "$out/build.log"; }
ls build-gpu/plugins
export HARNESS_PLUGIN_PATH="$PWD/build-gpu/plugins:$PWD/$bundle/plugins"
export LD_LIBRARY_PATH="${cudnn_root:+$cudnn_root/lib:}${torch_lib:+$torch_lib:}${LD_LIBRARY_PATH:-}"

step plugins
"$harness" list

step "plugin tests (a small network, every mode, against the reference on the CPU)"
HB_CUDNN_PLUGIN="$PWD/build-gpu/plugins/hb_cudnn.so" HB_CHECK_CONFIG="$PWD/configs/check.yaml" \
  timeout 600 "$bundle/cudnn_gpu_test" \
  --gtest_brief=1 >"$out/cudnn_gpu_test.txt" 2>&1
tail -n 25 "$out/cudnn_gpu_test.txt"
HB_LIBTORCH_PLUGIN="$PWD/build-gpu/plugins/hb_libtorch.so" timeout 600 "$bundle/libtorch_test" \
  --gtest_brief=1 --gtest_filter='LibTorchCuda.*:LibTorchPlugin.*' >"$out/libtorch_test.txt" 2>&1
tail -n 25 "$out/libtorch_test.txt"

step "conformance (configs/check.yaml, baseline reference on the CPU)"
"$harness" check configs/check.yaml \
  --backends libtorch-cuda,cudnn,cudnn-tf32,cudnn-bf16 | tee "$out/check.txt"

step "seed experiment (configs/hourglass8.yaml)"
"$harness" run configs/hourglass8.yaml \
  --backends libtorch-cuda,libtorch-cuda-graphs,cudnn,cudnn-graphs,cudnn-tf32-graphs,cudnn-bf16-graphs \
  --output "$out/hourglass8-h200.csv"

step summary
"$harness" report "$out/hourglass8-h200.csv" --baseline cudnn | tee "$out/summary.md"
echo "(vs cudnn: each median over cudnn fp32's; libtorch-cuda's value is the libtorch/cudnn ratio)"
