#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/install-deps.sh - install the Debian/Ubuntu packages routepool needs
# to build, test and run its tools.  Used by the README's quick start and by
# .ci/run.  Installs only what is missing (no network when nothing is), and
# uses sudo only when not already root.
#
#   sh scripts/install-deps.sh [EXTRA_PACKAGE...]
#
# EXTRA_PACKAGEs are installed too, under the same rule (.ci/run adds
# prometheus for its promtool).
#
# It never leaves a daemon running or enabled: while apt-get installs, a
# temporary /usr/sbin/policy-rc.d answers 101 ("action forbidden"), so no
# package's maintainer script starts its service (redis-server's Debian
# package would start and enable redis-server.service; the tests start their
# own redis-server on a free port of 127.0.0.1).  An existing policy-rc.d is
# left as it is.  Afterwards every systemd service shipped by a package this
# run installed is disabled (and stopped when systemd is running), so none
# starts at the next boot either.  Services of packages that were already
# installed are not touched.
set -eu

# build: compiler, cmake, pkg-config, the library's dependencies (ck,
#   xxhash; jemalloc for the tools, benchmarks and tests, which link it);
#   systemtap-sdt-dev: <sys/sdt.h> for the USDT probes; clang: CI builds with
#   it too; help2man: the tools' man pages, made from --help.
# cluster library and tools: libhiredis-dev, libmicrohttpd-dev.
# tests: criterion; python3 and python3-prometheus-client (JSON checks, the
#   Prometheus text parser for the metrics page); valgrind (the leak check);
#   redis-server and redis-tools (the cluster tests start their own server).
PACKAGES="build-essential cmake pkg-config clang libck-dev libjemalloc-dev libxxhash-dev
systemtap-sdt-dev help2man libhiredis-dev libmicrohttpd-dev libcriterion-dev python3
python3-prometheus-client valgrind redis-server redis-tools"
if [ $# -gt 0 ]; then
  PACKAGES="$PACKAGES $*"
fi

missing=""
for pkg in $PACKAGES; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  case "$status" in
    *" installed") ;;
    *) missing="$missing $pkg" ;;
  esac
done

if [ -z "$missing" ]; then
  # shellcheck disable=SC2086 # one line, whatever the list's layout
  echo "install-deps: all present:" $PACKAGES
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "install-deps: missing:$missing; run as root or install sudo" >&2
  exit 1
fi

policy=/usr/sbin/policy-rc.d
ours=""
remove_policy() {
  if [ -n "$ours" ]; then
    $SUDO rm -f "$policy"
    ours=""
  fi
}
trap remove_policy EXIT
trap 'remove_policy; exit 1' INT TERM HUP
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# scripts/install-deps.sh: start no service while installing\nexit 101\n' |
    $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  ours=yes
fi

echo "install-deps: installing:$missing"
$SUDO apt-get update
# shellcheck disable=SC2086 # word splitting of the package list is wanted
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
remove_policy

# Disable (and stop, under a running systemd) the services the packages just
# installed ship: a build's set-up starts no daemon, now or at boot.
units=""
for pkg in $missing; do
  for f in $(dpkg -L "$pkg" 2>/dev/null | grep -E '^/(usr/)?lib/systemd/system/[^/@]+\.service$' || true); do
    units="$units ${f##*/}"
  done
done
if [ -n "$units" ] && command -v systemctl >/dev/null 2>&1; then
  if [ -d /run/systemd/system ]; then
    # shellcheck disable=SC2086
    $SUDO systemctl disable --now $units
  else
    # shellcheck disable=SC2086
    $SUDO systemctl disable $units 2>/dev/null || true
  fi
  echo "install-deps: disabled, not running:$units"
fi
