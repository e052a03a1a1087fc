#!/usr/bin/env bash
# Installs what building and testing the harness needs on Debian 12 (run as root or with sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config
  libyaml-cpp-dev libboost-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev libtorch-dev
  gnuplot-nox
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "setup: installed ${packages[*]}"
