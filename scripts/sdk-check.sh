#!/usr/bin/env bash
# The SDK as a plugin author outside this tree gets it (docs/writing-a-plugin.md): installs a built
# build folder to a new prefix; checks that the installed harness lists every installed plugin,
# loaded, without HARNESS_PLUGIN_PATH, and loads its installed communicator mpi; builds a copy of
# the loops plugin's sources with docs/examples/out-of-tree/ as the plugin `tutorial`, against
# that prefix alone; and runs the conformance suite on it with the installed harness and its
# installed check configs (`harness check --suite tutorial`, which must say CONFORMANT).
#
#   scripts/sdk-check.sh BUILD
#
# Works in a new temporary folder, removed at the end unless KEEP=1.
set -euo pipefail
[[ $# -eq 1 ]] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
source_dir=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
work=$(mktemp -d)
if [[ ${KEEP:-} == 1 ]]; then
  echo "sdk-check: working in $work (kept)"
else
  trap 'rm -rf "$work"' EXIT
fi
prefix=$work/prefix
tutorial=$work/tutorial
fail() { echo "sdk-check: FAIL: $*" >&2; exit 1; }
# `harness check` records its verdicts in the user's cache folder: this one keeps them here.
export XDG_CACHE_HOME=$work/cache
unset HARNESS_PLUGIN_PATH

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install failed"; }
[[ -x $prefix/bin/harness ]] || fail "no $prefix/bin/harness"
shopt -s nullglob
installed=("$prefix"/lib/harness/plugins/hb_*.so)
shopt -u nullglob
((${#installed[@]})) || fail "no plugin in $prefix/lib/harness/plugins"

echo "== harness list (installed, without HARNESS_PLUGIN_PATH)"
list=$("$prefix/bin/harness" list)
echo "$list"
! grep -q "failed to load" <<<"$list" || fail "an installed plugin does not load"
for file in "${installed[@]}"; do
  name=${file##*/hb_}
  name=${name%.so}
  grep -F "  $file" <<<"$list" | grep -q "^$name " || fail "harness list does not show $file"
done

if [[ -f $prefix/lib/harness/communicators/libhb_comm_mpi.so ]] && command -v mpirun >/dev/null; then
  echo "== harness check configs/check-parallel.yaml (the installed communicator mpi)"
  "$prefix/bin/harness" check "$source_dir/configs/check-parallel.yaml" --backends reference ||
    fail "the installed harness does not run the data-parallel check with its communicator"
fi

echo "== the loops plugin's sources as the plugin tutorial, in $tutorial"
mkdir -p "$tutorial"
cp "$source_dir"/plugins/loops/*.cpp "$source_dir"/plugins/loops/*.hpp \
  "$source_dir"/docs/examples/out-of-tree/* "$tutorial"/
cmake -S "$tutorial" -B "$tutorial/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$tutorial/build"
package=$(sed -n 's/^HarnessSDK_DIR:PATH=//p' "$tutorial/build/CMakeCache.txt")
[[ $package == "$prefix/lib/cmake/HarnessSDK" ]] ||
  fail "HarnessSDK was found in $package, not in $prefix/lib/cmake/HarnessSDK"

echo "== HARNESS_PLUGIN_PATH=$tutorial/build harness check --suite tutorial"
[[ -f $prefix/share/harness/configs/check.yaml ]] || fail "no $prefix/share/harness/configs"
suite=$(HARNESS_PLUGIN_PATH=$tutorial/build "$prefix/bin/harness" check --suite tutorial --quiet) ||
  { echo "$suite"; fail "the plugin tutorial is not conformant"; }
sed -n '/^suite: /,$p' <<<"$suite"
grep -q "^suite: plugin tutorial on cpu, 2 steps, the check configs of $prefix/share/harness/configs$" \
  <<<"$suite" || fail "the installed harness did not take its installed check configs"
echo "sdk-check: the installed harness, its plugins and the out-of-tree plugin tutorial: pass"
