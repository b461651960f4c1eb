#!/usr/bin/env bash
# bench/run.sh - build routepool in Release and run every benchmark.
#
#   bench/run.sh            the full run (about 7 minutes on 2 vCPUs)
#   bench/run.sh --quick    a smoke run (about 1 minute)
#
# Output goes to the terminal and to bench/results/<date>-<commit>.txt, which
# starts with the commit, compiler, flags and CPU (each benchmark repeats its
# own machine header: the vCPU placement can change between them), and the
# sojourn benchmark's per-run numbers to <same name>-sojourn.json.
# The build directory is build-bench/ (override with BUILD_DIR=...).
#
# rp-bench-tiny compares routepool with two peers from Debian packages; the
# apt line below installs them when missing (as root, or through sudo).
# Without them the build still works and the peers are skipped.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
build=${BUILD_DIR:-$root/build-bench}
mode=()
case "${1:-}" in
  "") ;;
  --quick) mode=(--quick) ;;
  -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
  *) echo "usage: bench/run.sh [--quick]" >&2; exit 2 ;;
esac

# ---- peers for rp-bench-tiny ----
PEERS="cthreadpool-dev libuv1-dev"
missing=""
for pkg in $PEERS; do
  case "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" in
    *" installed") ;;
    *) missing="$missing $pkg" ;;
  esac
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO=sudo; else SUDO=none; fi
  if [ "$SUDO" = none ]; then
    echo "run.sh: peers missing:$missing (no root, no sudo): rp-bench-tiny skips them" >&2
  else
    echo "run.sh: installing benchmark peers:$missing"
    # shellcheck disable=SC2086 # word splitting of the package list is wanted
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing ||
      echo "run.sh: could not install$missing: rp-bench-tiny skips them" >&2
  fi
fi

# ---- build (Release; tests and tools are not needed here) ----
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRP_BUILD_BENCH=ON \
  -DRP_BUILD_TESTS=OFF -DRP_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target rp-bench-sojourn rp-bench-tiny rp-bench-scatter

# ---- results file ----
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit-dirty"
fi
mkdir -p "$root/bench/results"
out="$root/bench/results/$(date -u +%Y-%m-%d-%H%M%S)-$commit.txt"
{
  echo "# routepool benchmarks ${mode[*]:-(full run)}"
  echo "# commit:   $commit"
  echo "# date:     $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# cpu:      $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //') ($(nproc) online CPUs)"
  echo "# compiler: $(cc --version | head -1)"
  echo "# flags:    $(grep -m1 '^CMAKE_C_FLAGS_RELEASE:' "$build/CMakeCache.txt" | sed 's/.*=//')" \
       "+ the root's warning set (each benchmark prints its full flags)"
  echo "# kernel:   $(uname -r)"
  echo
} | tee "$out"

run() {
  echo "## $*" | tee -a "$out"
  # Progress lines go to stderr (terminal only); results to both.
  "$build/bench/$@" | tee -a "$out"
  echo | tee -a "$out"
}

run rp-bench-sojourn "${mode[@]}" --json "${out%.txt}-sojourn.json"
run rp-bench-tiny "${mode[@]}"
run rp-bench-scatter "${mode[@]}"
echo "run.sh: results in ${out#"$root"/}"
