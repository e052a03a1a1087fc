#!/usr/bin/env bash
# Proves the README's set-up on a truly fresh Debian 12: builds a minimal system with debootstrap
# into a folder, clones this repository's HEAD into it, and runs the README's two set-up commands
# there (chroot), as a new user would, timing each. Needs root; takes 20-40 minutes on 2 cores.
#
#   scripts/fresh-machine-test.sh [--dir DIR] [--mirror URL] [--keep]
#
# --dir     where the system is built (default: a new folder under /var/tmp); it must not exist
# --mirror  the Debian archive (default: http://deb.debian.org/debian)
# --keep    keep the system afterwards (it is removed by default)
# The log of each command, each line stamped with the seconds since it started, is kept in
# <dir>.logs/ either way.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir="" mirror=http://deb.debian.org/debian keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --dir) dir=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-machine-test: needs root (debootstrap, mount, chroot)" >&2
  exit 2
fi
if ! command -v debootstrap >/dev/null; then
  echo "fresh-machine-test: installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
[ -n "$dir" ] || dir=/var/tmp/hb-fresh-$(date -u +%Y%m%dT%H%M%SZ)
if [ -e "$dir" ]; then
  echo "fresh-machine-test: $dir exists; give a new folder" >&2
  exit 2
fi
logs=$dir.logs
mkdir -p "$logs"

# The README's two set-up commands: the first two sh blocks after its "## Set-up" heading.
mapfile -t commands < <(awk '
  /^## Set-up/ { inside = 1; next }
  inside && /^## / { exit }
  inside && /^```sh$/ { block = 1; text = ""; next }
  inside && block && /^```$/ { print text; block = 0; next }
  inside && block { text = text (text == "" ? "" : " ") $0 }' "$repo/README.md")
if [ ${#commands[@]} -ne 2 ]; then
  echo "fresh-machine-test: README.md's Set-up section should hold two sh blocks, found ${#commands[@]}" >&2
  exit 1
fi

mounted=()
# shellcheck disable=SC2317  # run by the trap
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  if [ "$keep" -eq 0 ]; then rm -rf "$dir"; fi
}
trap cleanup EXIT

# Each line of the output with the seconds since its command started, so that the phases of a
# chained command (install, configure, build, run) can be read off the log.
stamped() {
  local start=$SECONDS line
  while IFS= read -r line; do printf '%5ds %s\n' $((SECONDS - start)) "$line"; done
}
elapsed() { local s=$1; printf '%dm%02ds' $((s / 60)) $((s % 60)); }
results=()

start=$SECONDS
echo "fresh-machine-test: debootstrap (minbase) bookworm into $dir"
debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$logs/debootstrap.log" 2>&1 ||
  { tail -20 "$logs/debootstrap.log"; exit 1; }
results+=("debootstrap: $(elapsed $((SECONDS - start)))")
cat >"$dir/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
EOF
# The host's network settings, as a machine on the same network has them: its resolver, its
# local certificate authorities (a proxy's, say; ca-certificates adds them to the trust store when
# setup.sh installs it), and the proxy and certificate variables that pip and others read.
cp /etc/resolv.conf "$dir/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
  mkdir -p "$dir/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$dir/usr/local/share/ca-certificates/"
fi
network_env=()
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL \
    PIP_CERT SSL_CERT_FILE REQUESTS_CA_BUNDLE; do
  [ -n "${!v:-}" ] && network_env+=("$v=${!v}")
done
for m in proc sys dev dev/pts; do
  mount --bind "/$m" "$dir/$m"
  mounted+=("$dir/$m")
done
# The repository as a new user gets it: a clone of the commit, nothing untracked.
git clone -q --no-local "$repo" "$dir/root/harness"
commit=$(git -C "$dir/root/harness" rev-parse --short HEAD)
echo "fresh-machine-test: cloned $commit into /root/harness"

status=0
for i in 0 1; do
  echo "fresh-machine-test: [$((i + 1))/2] ${commands[i]}"
  start=$SECONDS
  if chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 "${network_env[@]}" \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      bash -c "cd /root/harness && ${commands[i]}" 2>&1 | stamped >"$logs/command$((i + 1)).log"; then
    verdict=ok
  else
    verdict="FAILED (exit $?)"
    status=1
  fi
  results+=("command $((i + 1)): $verdict in $(elapsed $((SECONDS - start)))")
  tail -15 "$logs/command$((i + 1)).log"
  [ $status -eq 0 ] || break
done

echo "fresh-machine-test: $commit on a fresh Debian 12 (minbase)," \
  "$(nproc) cores; logs in $logs"
printf '  %s\n' "${results[@]}"
exit $status
