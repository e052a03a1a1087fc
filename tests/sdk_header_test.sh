#!/usr/bin/env bash
# The plugin author's header stays one short read: include/hb/plugin.hpp at most 200 lines (the
# machinery is in include/hb/detail/), and the graph's header does not pull it in.
set -euo pipefail
include=$1
status=0
lines=$(grep -c '' "$include/hb/plugin.hpp")
echo "include/hb/plugin.hpp: $lines lines"
if (( lines > 200 )); then echo "FAIL: plugin.hpp has $lines lines, more than 200"; status=1; fi
if grep -q '#include "hb/plugin.hpp"' "$include/hb/graph.hpp"; then
  echo "FAIL: hb/graph.hpp includes hb/plugin.hpp"
  status=1
fi
exit "$status"
