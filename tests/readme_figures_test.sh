#!/usr/bin/env bash
# The figures of README.md's answer table come from the report the section cites: every number in
# the first table under "## The seed's answer" is found, as written and not as part of a longer
# number, in that report.
#   tests/readme_figures_test.sh REPOSITORY
set -euo pipefail
root=$1
readme=$root/README.md

section=$(awk '/^## / { inside = ($0 == "## The seed'"'"'s answer") } inside' "$readme")
[[ -n $section ]] || { echo "FAIL: README.md has no section \"## The seed's answer\""; exit 1; }
report=$(grep -oE '\]\(results/[^)]*report\.md\)' <<<"$section" | head -n 1 | sed 's/^](//; s/)$//')
[[ -n $report ]] || { echo "FAIL: the section cites no results/.../report.md"; exit 1; }
[[ -f $root/$report ]] || { echo "FAIL: the section cites $report, which does not exist"; exit 1; }

table=$(awk '/^\|/ { seen = 1; print; next } seen { exit }' <<<"$section" | tail -n +3)
numbers=$(grep -oE '[-+]?[0-9]+(\.[0-9]+)?%?' <<<"$table" || true)
count=$(grep -c . <<<"$numbers" || true)
((count >= 5)) || { echo "FAIL: the answer table quotes $count numbers; it should quote the report's"; exit 1; }

status=0
while IFS= read -r number; do
  pattern=${number//./\\.}
  pattern=${pattern//+/\\+}
  if ! grep -qE -- "(^|[^0-9.])$pattern([^0-9]|\$)" "$root/$report"; then
    echo "FAIL: README.md's answer table says $number, which $report does not"
    status=1
  fi
done <<<"$numbers"
((status == 0)) && echo "README.md's answer table: $count numbers, each found in $report"
exit "$status"
