#!/usr/bin/env bash
# Proves scripts/setup.sh's package list: every file that configure, build and tests read from a
# Debian package must come from a package that setup.sh installs, pulls in as a dependency, or
# that a minimal Debian 12 system already has (priority "required", and apt).
#
#   scripts/package-audit.sh trace DIR -- COMMAND...   run COMMAND, recording (strace) every file
#                                                      it and its children open or execute
#   scripts/package-audit.sh check DIR [--without PKG]... [--leave-one-out]
#       check DIR's records against setup.sh's list (less each --without package); exit 1 naming
#       each missing package. --leave-one-out checks the list once without each of its packages
#       and says which removals the audit would catch.
set -euo pipefail
# The script sorts and matches in the C locale; the traced command runs in the caller's, since
# ccache's keys include the locale: a traced build then shares the cache of an untraced one.
if [[ -v LC_ALL ]]; then caller_locale=("LC_ALL=$LC_ALL"); else caller_locale=(-u LC_ALL); fi
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

trace() {
  local dir=$1; shift
  [ "${1:-}" = "--" ] && shift
  [ $# -gt 0 ] || usage
  mkdir -p "$dir"
  # Successful opens and executions only; paths unabridged; seccomp keeps other calls untraced.
  strace -f -qq --seccomp-bpf -z -s 4096 -e trace=open,openat,execve -e signal=none \
    -o "$dir/trace.$(date +%s%N)" -- env "${caller_locale[@]}" "$@"
}

# Files that tools read whatever they are doing, whichever package put them there, and that no
# build needs: configuration (/etc; apt, ld and ldconfig read every file of their .d folders), the
# C library's table of locale names (read to set the caller's locale, when the locales package
# is there), and the linker plugins that binutils loads from its plugin folders, with the
# libraries they load (the packages that own such a plugin count as allowed, with their
# dependencies).
configuration='^/etc/|^/usr/share/locale/locale\.alias$'
plugin_folders='^/usr/lib/bfd-plugins/|^/usr/lib/x86_64-linux-gnu/bfd-plugins/'

# Absolute paths from the records, as opened (the folder resolved, the name kept: a -dev
# package's unversioned library link is owned by the -dev package, its target by the runtime one),
# and where that is a symbolic link, also what it finally points to (/usr/bin/gnuplot, a link
# through /etc/alternatives, is owned by no package; /usr/bin/gnuplot-nox is).
read_paths() {
  local dir=$1
  cat "$dir"/trace.* |
    sed -n 's/^[0-9]* *\(open\|openat\|execve\)([^"]*"\(\/[^"]*\)".*/\2/p' | sort -u |
    canonical_dirs | grep -Ev "$configuration" |
    while IFS= read -r f; do
      [ -f "$f" ] || continue
      printf '%s\n' "$f"
      [ -L "$f" ] && realpath -e -- "$f"
    done | grep -Ev "$configuration" | sort -u || true
}

# stdin: absolute paths, possibly with a tab and a value after; stdout: the same with each path's
# folder resolved through symbolic links (/lib -> /usr/lib on a merged-/usr system).
canonical_dirs() {
  local tmp; tmp=$(mktemp -d)
  cat >"$tmp/in"
  cut -f1 "$tmp/in" | sed 's|/[^/]*$||; s|^$|/|' | sort -u >"$tmp/dirs"
  tr '\n' '\0' <"$tmp/dirs" | xargs -0 -r realpath -m -- >"$tmp/real"
  awk -F'\t' -v OFS='\t' '
    FILENAME == ARGV[1] { dirs[++n] = $0; next }
    FILENAME == ARGV[2] { real[dirs[FNR]] = $0; next }
    {
      path = $1; d = path; sub(/\/[^\/]*$/, "", d); if (d == "") d = "/"
      name = substr(path, length(d) + (d == "/" ? 1 : 2))
      $1 = (real[d] == "/" ? "" : real[d]) "/" name
      print
    }' "$tmp/dirs" "$tmp/real" "$tmp/in"
  rm -rf "$tmp"
}

# Every installed package's files: "path<TAB>package".
owners() {
  awk -v OFS='\t' 'FNR == 1 { p = FILENAME; sub(/.*\//, "", p); sub(/\.list$/, "", p); sub(/:.*/, "", p) }
       { print $0, p }' /var/lib/dpkg/info/*.list | canonical_dirs
}

# The packages a fresh system has, or setup.sh's list pulls in, given the list.
allowed() {
  local base
  base=$(dpkg-query -W -f='${Package} ${Priority}\n' | awk '$2 == "required" { print $1 }')
  # shellcheck disable=SC2086
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "$@" apt $base 2>/dev/null |
    sed -n 's/^<\{0,1\}\([^ <>:]*\).*/\1/p' | sort -u
}

# Of the packages on stdin, those that some Debian archive serves (the others were installed from
# elsewhere: the CUDA toolkit, say).
from_archive() {
  local pkgs; pkgs=$(cat)
  [ -n "$pkgs" ] || return 0
  # shellcheck disable=SC2086
  apt-cache madison $pkgs 2>/dev/null | awk '{ print $1 }' | sort -u
}

# $1: the folder of check's files; then the package list. Prints each package that files were read
# from and that the list does not account for, with one of those files.
missing() {
  local tmp=$1; shift
  # shellcheck disable=SC2046
  allowed "$@" $(cat "$tmp/plugin-packages") >"$tmp/allowed"
  comm -23 "$tmp/used-packages" "$tmp/allowed" | from_archive >"$tmp/missing"
  join -t$'\t' -1 1 -2 2 "$tmp/missing" "$tmp/used" | awk -F'\t' '!seen[$1]++ { print $1 "\t" $2 }'
}

check() {
  local dir=$1; shift
  local without=() leave_one_out=0
  while [ $# -gt 0 ]; do
    case $1 in
      --without) without+=("$2"); shift 2 ;;
      --leave-one-out) leave_one_out=1; shift ;;
      *) usage ;;
    esac
  done
  compgen -G "$dir/trace.*" >/dev/null || { echo "package-audit: no records in $dir" >&2; exit 2; }

  local tmp; tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  read_paths "$dir" >"$tmp/paths"
  owners | sort -t$'\t' -k1,1 -u >"$tmp/owners"
  # The packages each read file came from, and the files it was read for.
  sort -u "$tmp/paths" | join -t$'\t' - "$tmp/owners" | sort -t$'\t' -k2,2 >"$tmp/used"
  local unowned
  unowned=$(sort -u "$tmp/paths" | join -t$'\t' -v1 - "$tmp/owners" | grep -c '^/usr/' || true)
  grep -E "$plugin_folders" "$tmp/used" | cut -f2 | sort -u >"$tmp/plugin-packages" || true
  cut -f2 "$tmp/used" | sort -u >"$tmp/used-packages"

  local list; list=$(bash "$here/setup.sh" --list)
  local p; for p in "${without[@]}"; do list=$(grep -vx -- "$p" <<<"$list"); done

  echo "package-audit: $(wc -l <"$tmp/paths") files read, from $(wc -l <"$tmp/used-packages") packages;" \
    "$unowned under /usr from no package (installed outside Debian's packages, not audited)"
  if [ $leave_one_out -eq 1 ]; then
    local caught=0 total=0 q
    for p in $list; do
      total=$((total + 1))
      # shellcheck disable=SC2046
      q=$(missing "$tmp" $(grep -vx -- "$p" <<<"$list") | cut -f1 | tr '\n' ' ')
      if [ -n "$q" ]; then
        caught=$((caught + 1)); echo "  without $p: fails, missing $q"
      elif grep -qx -- "$p" "$tmp/used-packages"; then
        echo "  without $p: passes (read, but another listed package pulls it in)"
      else
        echo "  without $p: passes (nothing read comes from $p itself)"
      fi
    done
    echo "package-audit: $caught of $total removals caught"
    return 0
  fi

  # shellcheck disable=SC2086
  missing "$tmp" $list >"$tmp/report"
  if [ -s "$tmp/report" ]; then
    echo "package-audit: FAIL: files were read from Debian packages that scripts/setup.sh" \
      "neither installs nor pulls in:" >&2
    awk -F'\t' '{ printf "  %s (for example %s)\n", $1, $2 }' "$tmp/report" >&2
    echo "package-audit: add them to the list in scripts/setup.sh" >&2
    return 1
  fi
  echo "package-audit: pass: every package read is installed by scripts/setup.sh, pulled in" \
    "by it, or part of a minimal Debian 12"
}

case ${1:-} in
  trace) shift; [ $# -ge 2 ] || usage; trace "$@" ;;
  check) shift; [ $# -ge 1 ] || usage; check "$@" ;;
  *) usage ;;
esac
