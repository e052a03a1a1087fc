#!/usr/bin/env bash
# scripts/package-audit.sh on records made up here: a header of libyaml-cpp-dev (which setup.sh
# installs) read through a path with a detour passes, and fails naming the package once it is left
# out of the list; a file that no package owns is not audited.
set -euo pipefail
audit=$1
records=$(mktemp -d)
trap 'rm -rf "$records"' EXIT
cat >"$records/trace.1" <<'TRACE'
101   openat(AT_FDCWD, "/usr/lib/x86_64-linux-gnu/../../include/yaml-cpp/yaml.h", O_RDONLY) = 3
101   openat(AT_FDCWD, "/no/such/package/file.h", O_RDONLY) = 3
102   execve("/usr/bin/cmake", ["cmake"], 0x7ffd /* 3 vars */) = 0
TRACE

out=$(bash "$audit" check "$records" 2>&1) || { echo "$out"; echo "FAIL: expected a pass"; exit 1; }
echo "$out"
if out=$(bash "$audit" check "$records" --without libyaml-cpp-dev 2>&1); then
  echo "$out"; echo "FAIL: expected a failure without libyaml-cpp-dev"; exit 1
fi
echo "$out"
grep -q '^  libyaml-cpp-dev (for example /usr/include/yaml-cpp/yaml.h)$' <<<"$out" ||
  { echo "FAIL: the failure does not name libyaml-cpp-dev and its file"; exit 1; }
echo "package audit: pass and failure as expected"
