#!/usr/bin/env bash
# On the Debian build machine: puts the built harness, its CPU reference plugin and the GPU
# plugins' test programs (which load a plugin named by HB_CUDNN_PLUGIN / HB_LIBTORCH_PLUGIN) into
# gpu-bundle/, small enough to travel with the source tree to a CUDA machine that lacks the
# harness's own dependencies (docs/design.md §10). scripts/gpu-check.sh uses it there.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target harness hb_reference cudnn_gpu_test libtorch_test hb_comm_nccl
rm -rf gpu-bundle
mkdir -p gpu-bundle/plugins
cp "$build/harness" "$build/tests/cudnn_gpu_test" "$build/tests/libtorch_test" gpu-bundle/
cp "$build/plugins/hb_reference.so" gpu-bundle/plugins/
# The harness's one shared library outside the C and C++ runtimes (Debian's Google Benchmark),
# which a machine without Debian's packages lacks; gpu-check.sh puts lib/ on LD_LIBRARY_PATH.
mkdir -p gpu-bundle/lib
ldd "$build/harness" | awk '/libbenchmark/ {print $3}' | xargs -r cp -L -t gpu-bundle/lib/
# The communicator modules of data-parallel runs (docs/parallel.md), where they were built.
mkdir -p gpu-bundle/communicators
cp "$build"/communicators/libhb_comm_*.so gpu-bundle/communicators/ 2>/dev/null || true
du -sh gpu-bundle
