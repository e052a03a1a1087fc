#!/usr/bin/env bash
# On the Debian build machine: puts the built harness and its CPU reference plugin into
# gpu-bundle/, small enough to travel with the source tree to a CUDA machine that lacks the
# harness's own dependencies (DESIGN §10). scripts/gpu-check.sh uses it there.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target harness hb_reference
rm -rf gpu-bundle
mkdir -p gpu-bundle/plugins
cp "$build/harness" gpu-bundle/
cp "$build/plugins/hb_reference.so" gpu-bundle/plugins/
du -sh gpu-bundle
