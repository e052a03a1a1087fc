#!/usr/bin/env bash
# Small files with one job each: no source file of the harness, the SDK, a plugin, the tests, the
# fuzzers or the benchmarks is over 450 lines; one that grows past it is split by what its parts do.
set -euo pipefail
root=$1
status=0
while IFS= read -r -d '' file; do
  lines=$(grep -c '' "$file")
  if ((lines > 450)); then
    echo "FAIL: ${file#"$root"/} has $lines lines, more than 450"
    status=1
  fi
done < <(find "$root/harness" "$root/include" "$root/plugins" "$root/tests" "$root/fuzz" "$root/bench" -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0)
exit "$status"
