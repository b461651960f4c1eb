#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/install-deps.sh - install the Debian/Ubuntu packages routepool needs
# to build, test and run its demo.  Used by the README's quick start and by
# .ci/run.  Installs only what is missing (no network when nothing is), and
# uses sudo only when not already root.
set -eu

# systemtap-sdt-dev: <sys/sdt.h> for the USDT probes; python3: JSON checks in
# tests; valgrind: the leak check; prometheus: its promtool lints /metrics.
PACKAGES="build-essential cmake pkg-config libck-dev libjemalloc-dev libcriterion-dev libxxhash-dev systemtap-sdt-dev python3 valgrind prometheus"

missing=""
for pkg in $PACKAGES; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  case "$status" in
    *" installed") ;;
    *) missing="$missing $pkg" ;;
  esac
done

if [ -z "$missing" ]; then
  echo "install-deps: all present: $PACKAGES"
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

echo "install-deps: installing:$missing"
$SUDO apt-get update
# shellcheck disable=SC2086 # word splitting of the package list is wanted
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
