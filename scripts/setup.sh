#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing the harness need. Idempotent: when
# every package is already installed it changes nothing and needs no privileges.
#   scripts/setup.sh            install what is missing (as root, or through sudo)
#   scripts/setup.sh --list     print the package list, one a line (scripts/package-audit.sh reads it)
set -euo pipefail

packages=(
  build-essential cmake ninja-build git
  libyaml-cpp-dev libboost-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev libtorch-dev
  # Debian builds oneDNN with its OpenCL GPU runtime, so oneDNN's CMake package requires OpenCL's
  # headers and library, which libdnnl-dev does not pull in.
  ocl-icd-opencl-dev
  gnuplot-nox
  # CI's audit of this list (scripts/package-audit.sh) traces the build with it.
  strace
)

if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != "installed" ]; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo)
  elif command -v sudo >/dev/null && [ -t 0 ]; then
    as_root=(sudo)  # sudo asks for the password
  else
    echo "setup: these packages are missing: ${missing[*]}" >&2
    echo "setup: installing them needs root; run as root:" >&2
    echo "  apt-get update && apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
