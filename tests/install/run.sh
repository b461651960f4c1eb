#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install/run.sh - prove that an installed routepool works for a user.
#
#   run.sh BUILD_DIR CONSUMER_DIR C_COMPILER PKG_CONFIG TOOLS_BUILT
#
# Installs the build tree (cmake --install) into a fresh temporary prefix,
# then builds tests/install/consumer/main.c against that prefix four ways and
# runs each binary:
#   (a) pkg-config --cflags --libs routepool            (shared library)
#       pkg-config --static --cflags --libs routepool   (static library)
#   (b) find_package(routepool) -> routepool::routepool  and
#                                  routepool::routepool_static
#   (c) dlopen() of the installed libroutepool.so.0.1 (consumer/dlopen.c),
#       with jemalloc preloaded and with glibc's optional static TLS raised
# and, when the tools were built, runs the installed rp-demo.  It also checks
# that every binary loads libroutepool from the prefix (not from a copy
# installed elsewhere on the machine).  Any failure exits non-zero with a
# message; nothing is skipped.
set -euo pipefail

if [ $# -ne 5 ]; then
  echo "usage: $0 BUILD_DIR CONSUMER_DIR C_COMPILER PKG_CONFIG TOOLS_BUILT" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
consumer=$(cd "$2" && pwd)
cc=$3
pkgconfig=$4
tools_built=$5
cmake=${RP_CMAKE:-cmake}  # the cmake that configured the build (set by ctest)

# Only the prefix may provide routepool: no inherited search paths.
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH

work=$(mktemp -d "${TMPDIR:-/tmp}/routepool-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { printf '\n== %s\n' "$*"; }
die() { printf '\ninstall test FAILED: %s\n' "$*" >&2; exit 1; }
run() { printf '+ %s\n' "$*"; "$@"; }

# Fails unless BINARY loads libroutepool.so from the prefix's libdir
# (want=shared; LD_LIBRARY_PATH=$3 if given), or does not load it at all
# (want=static).
check_loads() {
  local binary=$1 want=$2 line path
  line=$(LD_LIBRARY_PATH=${3:-} ldd "$binary" | grep 'libroutepool\.so' || true)
  if [ "$want" = static ]; then
    [ -z "$line" ] || die "$binary should be linked statically but loads: $line"
    return 0
  fi
  path=$(printf '%s\n' "$line" | awk '{ print $3 }')
  if [ -z "$path" ] || [ "$(realpath -m "$(dirname "$path")")" != "$(realpath "$libdir")" ]; then
    die "$binary does not load libroutepool.so from $libdir: '${line:-not loaded}'"
  fi
}

step "install the build tree into $prefix"
run "$cmake" --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 \
  || { cat "$work/install.log"; die "cmake --install failed"; }
pc=$(find "$prefix" -path '*/pkgconfig/routepool.pc' | head -n 1)
[ -n "$pc" ] || die "no pkgconfig/routepool.pc under $prefix"
libdir=$(dirname "$(dirname "$pc")")
for f in "$libdir/libroutepool.so" "$libdir/libroutepool.a" \
         "$libdir/cmake/routepool/routepoolConfig.cmake" \
         "$libdir/cmake/routepool/routepoolConfigVersion.cmake" \
         "$prefix/include/routepool/routepool.h"; do
  [ -e "$f" ] || die "missing after install: $f"
done
echo "installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"

step "(a) pkg-config, shared library"
export PKG_CONFIG_PATH=$libdir/pkgconfig
run "$pkgconfig" --modversion routepool
includedir=$("$pkgconfig" --variable=includedir routepool)
case "$(realpath -m "$includedir")/" in
  "$(realpath "$prefix")"/*) ;;
  *) die "routepool.pc says includedir=$includedir, outside the prefix $prefix it was" \
         "installed to: the .pc file must be relocatable (cmake --install --prefix)" ;;
esac
read -r -a flags <<< "$("$pkgconfig" --cflags --libs routepool)"
cflags=(-std=c11 -O2 -Wall -Wextra -Wpedantic -Werror)
run "$cc" "${cflags[@]}" "$consumer/main.c" -o "$work/pc_shared" "${flags[@]}"
check_loads "$work/pc_shared" shared "$libdir"
run env LD_LIBRARY_PATH="$libdir" "$work/pc_shared"

step "(a) pkg-config, static library"
read -r -a flags <<< "$("$pkgconfig" --static --cflags --libs routepool)"
# -lroutepool would pick the .so that sits next to the .a; ask for the .a.
for i in "${!flags[@]}"; do
  if [ "${flags[$i]}" = -lroutepool ]; then flags[i]=-l:libroutepool.a; fi
done
run "$cc" "${cflags[@]}" "$consumer/main.c" -o "$work/pc_static" "${flags[@]}"
check_loads "$work/pc_static" static
run "$work/pc_static"

step "(b) find_package(routepool), shared and static"
run "$cmake" -S "$consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; die "configuring the find_package consumer failed"; }
found=$(sed -n 's/^routepool_DIR:PATH=//p' "$work/cmake-build/CMakeCache.txt")
[ "$found" = "$libdir/cmake/routepool" ] \
  || die "find_package(routepool) found '$found', not $libdir/cmake/routepool"
run "$cmake" --build "$work/cmake-build" > "$work/build.log" 2>&1 \
  || { cat "$work/build.log"; die "building the find_package consumer failed"; }
check_loads "$work/cmake-build/consumer_shared" shared
run "$work/cmake-build/consumer_shared"
check_loads "$work/cmake-build/consumer_static" static
run "$work/cmake-build/consumer_static"

step "(c) dlopen() at run time, with each start-up setting README documents"
run "$cc" "${cflags[@]}" -I"$prefix/include" "$consumer/dlopen.c" -o "$work/dl" -ldl
jemalloc=$("$pkgconfig" --variable=libdir jemalloc)/libjemalloc.so.2
[ -e "$jemalloc" ] || die "no $jemalloc to preload"
run env LD_PRELOAD="$jemalloc" "$work/dl" "$libdir/libroutepool.so.0.1"
run env GLIBC_TUNABLES=glibc.rtld.optional_static_tls=4096 "$work/dl" "$libdir/libroutepool.so.0.1"

if [ "$tools_built" = ON ]; then
  step "installed rp-demo (finds libroutepool through its RPATH)"
  [ -x "$prefix/bin/rp-demo" ] || die "rp-demo was built but not installed to $prefix/bin"
  check_loads "$prefix/bin/rp-demo" shared
  run "$prefix/bin/rp-demo" --routees 2 --jobs 300 > "$work/demo.log" 2>&1 \
    || { cat "$work/demo.log"; die "installed rp-demo failed"; }
  tail -n 9 "$work/demo.log"
fi

printf '\ninstall test passed: pkg-config and find_package, shared and static; dlopen\n'
