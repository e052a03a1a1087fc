#!/usr/bin/env bash
# The plugin author's header stays one short read: include/hb/plugin.hpp at most 200 lines (the
# machinery is in include/hb/detail/), and the graph's header does not pull it in. A CPU backend's
# author reads at most 1,200 lines: the path docs/writing-a-plugin.md gives (the README, that page,
# hb/host_session.hpp, plugin.h's model-graph section and plugins/loops/).
#   tests/sdk_header_test.sh REPOSITORY
set -euo pipefail
repository=$1
include=$repository/include
status=0
lines=$(grep -c '' "$include/hb/plugin.hpp")
echo "include/hb/plugin.hpp: $lines lines"
if (( lines > 200 )); then echo "FAIL: plugin.hpp has $lines lines, more than 200"; status=1; fi
if grep -q '#include "hb/plugin.hpp"' "$include/hb/graph.hpp"; then
  echo "FAIL: hb/graph.hpp includes hb/plugin.hpp"
  status=1
fi
graph_section=$(awk '/-- the model graph/ {on = 1} on {n++} /} hb_graph;/ && on {print n; exit}' \
  "$include/hb/plugin.h")
path=(README.md docs/writing-a-plugin.md include/hb/host_session.hpp plugins/loops/plugin.cpp
  plugins/loops/session.hpp plugins/loops/session.cpp)
reading=$(( $(cd "$repository" && cat "${path[@]}" | grep -c '') + graph_section ))
echo "a CPU backend author's reading path: $reading lines (${path[*]}, and plugin.h's" \
  "model-graph section, $graph_section lines)"
if (( graph_section < 50 || reading > 1200 )); then
  echo "FAIL: the reading path is $reading lines, more than 1200 (or plugin.h's section moved)"
  status=1
fi
exit "$status"
