#!/usr/bin/env bash
# Installs what building and testing the harness need: Debian 12 packages, and today's LibTorch,
# oneDNN and TensorFlow from PyPI, pinned, in a virtual environment in the user's cache (never
# system-wide).
# Idempotent: what is already installed is left as it is, and needs no privileges.
#   scripts/setup.sh                 install what is missing (Debian's packages as root or through sudo)
#   scripts/setup.sh --list          print the Debian package list, one a line (package-audit.sh reads it)
#   scripts/setup.sh --pypi-prefix   print the virtual environment's folder (CMake reads it)
# HB_NO_PYPI=1 (for setup.sh and for the first configure) leaves PyPI out: the plugins are then
# built against Debian's LibTorch and oneDNN only.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git
  # The compiler launcher when present (CMakeLists.txt): a fresh clone recompiles only what changed.
  ccache
  libyaml-cpp-dev libboost-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # Google Benchmark's compare.py reads `harness layers --json` (tests/layers_test.cpp runs it);
  # Debian's python3 reads setuptools' .pth file at start-up wherever it is installed.
  libbenchmark-tools python3-scipy python3-setuptools
  libdnnl-dev libtorch-dev
  # Debian builds oneDNN with its OpenCL GPU runtime, so oneDNN's CMake package requires OpenCL's
  # headers and library, which libdnnl-dev does not pull in.
  ocl-icd-opencl-dev
  gnuplot-nox
  # Data-parallel runs (docs/parallel.md): Open MPI's library and headers, and its mpirun.
  libopenmpi-dev openmpi-bin
  # CMake's FindMPI asks pkg-config where Open MPI is.
  pkgconf
  # CI's audit of this list (scripts/package-audit.sh) traces the build with it.
  strace
  # The tests lint every shell script with it.
  shellcheck
  # scripts/fuzz.sh: libFuzzer is Clang's (its runtime is libclang-rt's).
  clang libclang-rt-14-dev
  # The virtual environment for the PyPI wheels below, and the trust store pip reaches PyPI with.
  python3-venv ca-certificates
  # torch.compile (scripts/bench-cpu.sh's PyTorch peer) compiles C++ against Python's headers.
  python3-dev
)

# The wheels' own libraries and CMake packages: LibTorch (with CUDA, which also brings the CUDA
# runtime libraries it links), and oneDNN 3.x built with GNU OpenMP, as CPU frameworks use it
# (PyPI's newer "onednn" runs its CPU primitives through SYCL only, which needs a SYCL CPU device),
# and TensorFlow for the CPU, whose wheel carries its C API's library and headers (the tensorflow
# plugin) and its Python package (scripts/tensorflow-peer.py). Every dependency is pinned too
# (pypi-constraints.txt). Changing a pin makes a new environment.
pypi=(torch==2.15.0 onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
  tensorflow-cpu==2.21.0)
constraints=$(dirname "$0")/pypi-constraints.txt
pins=$( (printf '%s\n' "${pypi[@]}"; grep -v '^#' "$constraints") | sha256sum | cut -c1-12)
pypi_prefix=${HB_PYPI_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/harness/pypi-$pins}

case ${1:-} in
  --list) printf '%s\n' "${packages[@]}"; exit 0 ;;
  --pypi-prefix) [ "${HB_NO_PYPI:-0}" = 1 ] || echo "$pypi_prefix"; exit 0 ;;
  "") ;;
  *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

install_pypi() {
  if [ "${HB_NO_PYPI:-0}" = 1 ]; then
    echo "setup: HB_NO_PYPI=1: no PyPI wheels; the plugins use Debian's LibTorch and oneDNN"
    return
  fi
  if [ -f "$pypi_prefix/.complete" ]; then
    echo "setup: PyPI wheels already installed in $pypi_prefix"
    return
  fi
  echo "setup: installing ${pypi[*]} from PyPI into $pypi_prefix (about 3.3 GB to download)"
  rm -rf "$pypi_prefix"
  /usr/bin/python3 -m venv "$pypi_prefix"
  if ! "$pypi_prefix/bin/pip" install -q --no-cache-dir --disable-pip-version-check \
      -c "$constraints" "${pypi[@]}"; then
    rm -rf "$pypi_prefix"
    echo "setup: installing from PyPI failed; without PyPI, run with HB_NO_PYPI=1 to build" \
      "against Debian's LibTorch and oneDNN only" >&2
    exit 1
  fi
  printf '%s\n' "${pypi[@]}" >"$pypi_prefix/.complete"
  echo "setup: PyPI wheels installed ($(du -sh "$pypi_prefix" | cut -f1))"
}

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != "installed" ]; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages already installed"
  install_pypi
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
echo "setup: Debian packages installed"
install_pypi
