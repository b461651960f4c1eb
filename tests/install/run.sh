#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install/run.sh - prove that an installed routepool works for a user.
#
#   run.sh BUILD_DIR CONSUMER_DIR C_COMPILER PKG_CONFIG TOOLS_BUILT MAN_PAGES PYTHON3
#
# First checks the build tree: libroutepool.so does not link jemalloc, and
# every program built there finds libroutepool through RUNPATH entries
# relative to itself ($ORIGIN), none empty (the current directory), none
# absolute.  Then installs the build tree (cmake --install) into a fresh
# temporary prefix, and against that prefix:
#   (a) pkg-config: --cflags carries no -D__x86_64__ (ck.pc's) and nothing of
#       ck or jemalloc is required; consumer/main.c built with
#       `pkg-config --cflags --libs routepool` (shared), and with README's two
#       static recipes (-l:libroutepool.a, and -Wl,-Bstatic ... -Wl,-Bdynamic)
#   (b) find_package(routepool): routepool::routepool and
#       routepool::routepool_static; find_package(routepool MAJOR.MINOR)
#       succeeds and MAJOR.MINOR+1 fails (0.1 / 0.2: SameMinorVersion)
#   (c) loading at run time with no environment setting (LD_PRELOAD and
#       GLIBC_TUNABLES unset): consumer/dlopen.c (dlopen + dlsym, no
#       jemalloc: memory_bytes 0) and Python ctypes (consumer/ctypes_load.py)
#   (d) a program linked with jemalloc first gets the arena statistics from
#       jemalloc (consumer/jemalloc_stats.c), with the shared and with the
#       static library
# and, when the tools were built, checks the installed tools' RUNPATH and
# man pages (share/man/man1) and runs the installed rp-demo.  Every binary
# must load libroutepool from the prefix (not from a copy installed
# elsewhere on the machine).  Any failure exits non-zero with a message;
# nothing is skipped.
set -euo pipefail

if [ $# -ne 7 ]; then
  echo "usage: $0 BUILD_DIR CONSUMER_DIR C_COMPILER PKG_CONFIG TOOLS_BUILT MAN_PAGES PYTHON3" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
consumer=$(cd "$2" && pwd)
cc=$3
pkgconfig=$4
tools_built=$5
man_pages=$6
python3=$7
cmake=${RP_CMAKE:-cmake}  # the cmake that configured the build (set by ctest)

# Only the prefix may provide routepool: no inherited search paths, and no
# start-up setting that would help a dlopen() of jemalloc.
unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH LD_PRELOAD GLIBC_TUNABLES

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

# The RUNPATH (or RPATH) of an ELF file, "" when it has none.
runpath() {
  readelf -d "$1" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p'
}

# Fails unless every entry of BINARY's RUNPATH starts with $ORIGIN.
check_origin_runpath() {
  local binary=$1 rp entry
  rp=$(runpath "$binary")
  [ -n "$rp" ] || return 0
  # A leading, trailing or doubled ':' is an empty entry: the current directory.
  case ":$rp:" in *::*) die "$binary: RUNPATH '$rp' has an empty entry (the current directory)" ;; esac
  IFS=: read -r -a entries <<< "$rp"
  for entry in "${entries[@]}"; do
    case "$entry" in
      '$ORIGIN'*) ;;
      *) die "$binary: RUNPATH '$rp' has an entry not relative to \$ORIGIN: '$entry'" ;;
    esac
  done
}

step "build tree: libroutepool.so links no jemalloc; RUNPATHs relative to \$ORIGIN"
readelf -d "$build/libroutepool.so" | grep NEEDED
if readelf -d "$build/libroutepool.so" | grep -q 'NEEDED.*jemalloc'; then
  die "$build/libroutepool.so links jemalloc: it must not (README, dlopen)"
fi
checked=0
while IFS= read -r -d '' f; do
  head -c 4 "$f" | grep -q 'ELF' || continue
  check_origin_runpath "$f"
  checked=$((checked + 1))
done < <(find "$build/tools" "$build/tests" "$build/bench" "$build/examples" -maxdepth 1 \
           -type f -perm -u+x -print0 2>/dev/null)
[ "$checked" -gt 0 ] || die "found no program in $build to check"
echo "$checked programs: every RUNPATH entry starts with \$ORIGIN, none is empty"
if [ "$tools_built" = ON ]; then
  echo "rp-demo: RUNPATH $(runpath "$build/tools/rp-demo")"
fi

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
soname=$(readelf -d "$libdir/libroutepool.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
[ -e "$libdir/$soname" ] || die "no $libdir/$soname (the SONAME)"

step "(a) pkg-config: what it asks of the user"
export PKG_CONFIG_PATH=$libdir/pkgconfig
run "$pkgconfig" --modversion routepool
includedir=$("$pkgconfig" --variable=includedir routepool)
case "$(realpath -m "$includedir")/" in
  "$(realpath "$prefix")"/*) ;;
  *) die "routepool.pc says includedir=$includedir, outside the prefix $prefix it was" \
         "installed to: the .pc file must be relocatable (cmake --install --prefix)" ;;
esac
pc_cflags=$("$pkgconfig" --cflags routepool)
pc_static=$("$pkgconfig" --static --cflags --libs routepool)
echo "--cflags: $pc_cflags"
echo "--static --cflags --libs: $pc_static"
case " $pc_cflags " in *-D__x86_64__*) die "pkg-config --cflags routepool leaks -D__x86_64__ (ck.pc)" ;; esac
case " $pc_static " in
  *-D__x86_64__*|*jemalloc*|*-lck\ *) die "pkg-config --static routepool names ck or jemalloc: $pc_static" ;;
esac
if "$pkgconfig" --print-requires --print-requires-private routepool | grep -Eq '^(ck|jemalloc)\b'; then
  die "routepool.pc requires ck or jemalloc: $("$pkgconfig" --print-requires-private routepool)"
fi

step "(a) pkg-config, shared library"
read -r -a flags <<< "$("$pkgconfig" --cflags --libs routepool)"
cflags=(-std=c11 -O2 -Wall -Wextra -Wpedantic -Werror)
run "$cc" "${cflags[@]}" "$consumer/main.c" -o "$work/pc_shared" "${flags[@]}"
check_loads "$work/pc_shared" shared "$libdir"
run env LD_LIBRARY_PATH="$libdir" "$work/pc_shared"

step "(a) pkg-config, static library: README's two recipes"
# README "Installing and using the package", word for word (but for $cc):
#   cc app.c $(pkg-config --static --cflags --libs routepool | sed 's/-lroutepool/-l:libroutepool.a/')
#   cc app.c $(pkg-config --static --cflags --libs routepool | sed 's/-lroutepool/-Wl,-Bstatic -lroutepool -Wl,-Bdynamic/')
# shellcheck disable=SC2046 # word splitting of pkg-config's output is wanted
run "$cc" "${cflags[@]}" "$consumer/main.c" -o "$work/pc_static" \
  $("$pkgconfig" --static --cflags --libs routepool | sed 's/-lroutepool/-l:libroutepool.a/')
check_loads "$work/pc_static" static
run "$work/pc_static"
# shellcheck disable=SC2046
run "$cc" "${cflags[@]}" "$consumer/main.c" -o "$work/pc_bstatic" \
  $("$pkgconfig" --static --cflags --libs routepool | sed 's/-lroutepool/-Wl,-Bstatic -lroutepool -Wl,-Bdynamic/')
check_loads "$work/pc_bstatic" static
run "$work/pc_bstatic"

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

step "(b) find_package(routepool MAJOR.MINOR): the version policy"
version=$("$pkgconfig" --modversion routepool)
IFS=. read -r major minor _ <<< "$version"
# want: expected result.  While 0.x a minor release may break the ABI, so
# only the same major.minor matches (docs/versioning.md).
if [ "$major" -eq 0 ]; then
  checks=("$major.$minor found" "$major.$((minor + 1)) absent")
else
  checks=("$major.0 found" "$((major + 1)).0 absent")
fi
for c in "${checks[@]}"; do
  read -r want expect <<< "$c"
  rm -rf "$work/version-build"
  "$cmake" -S "$consumer/version" -B "$work/version-build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DRP_WANT="$want" -DRP_RESULT="$work/version.txt" \
    > "$work/version.log" 2>&1 || { cat "$work/version.log"; die "version check project failed"; }
  result=$(cat "$work/version.txt")
  echo "find_package(routepool $want) against $version: $result"
  case "$expect:$result" in
    found:found*|absent:not\ found*) ;;
    *) die "find_package(routepool $want) against $version: $result, expected $expect" ;;
  esac
done

step "(c) loading at run time, no environment setting: dlopen() and Python ctypes"
run "$cc" "${cflags[@]}" -I"$prefix/include" "$consumer/dlopen.c" -o "$work/dl" -ldl
if readelf -d "$work/dl" | grep -q 'NEEDED.*jemalloc'; then die "the dlopen consumer links jemalloc"; fi
run "$work/dl" "$libdir/$soname"
run "$python3" "$consumer/ctypes_load.py" "$libdir/$soname"

step "(d) a program linked with jemalloc first: the arena statistics are jemalloc's"
jemalloc_first=(-Wl,--push-state,--no-as-needed -ljemalloc -Wl,--pop-state)
read -r -a je_cflags <<< "$("$pkgconfig" --cflags jemalloc)"
read -r -a flags <<< "$("$pkgconfig" --cflags --libs routepool)"
run "$cc" "${cflags[@]}" "${je_cflags[@]}" "$consumer/jemalloc_stats.c" -o "$work/je_shared" \
  "${jemalloc_first[@]}" "${flags[@]}" -pthread
check_loads "$work/je_shared" shared "$libdir"
run env LD_LIBRARY_PATH="$libdir" "$work/je_shared"
# shellcheck disable=SC2046
run "$cc" "${cflags[@]}" "${je_cflags[@]}" "$consumer/jemalloc_stats.c" -o "$work/je_static" \
  "${jemalloc_first[@]}" \
  $("$pkgconfig" --static --cflags --libs routepool | sed 's/-lroutepool/-l:libroutepool.a/')
check_loads "$work/je_static" static
run "$work/je_static"

if [ "$tools_built" = ON ]; then
  step "installed tools: RUNPATH \$ORIGIN/../<libdir>, man pages, rp-demo runs"
  for t in rp-demo rp-tune rp-profile; do
    [ -x "$prefix/bin/$t" ] || die "$t was built but not installed to $prefix/bin"
    check_origin_runpath "$prefix/bin/$t"
    check_loads "$prefix/bin/$t" shared
    echo "$t: RUNPATH $(runpath "$prefix/bin/$t")"
    if [ "$man_pages" = ON ]; then
      page=$prefix/share/man/man1/$t.1
      [ -s "$page" ] || die "no man page $page"
      upper=$(printf '%s' "$t" | tr '[:lower:]' '[:upper:]')
      grep -q "^\.TH $upper \"1\" .*\"$t $version\"" "$page" \
        || die "$page: no '.TH $upper \"1\" ... \"$t $version\"' line"
      grep -q '^\.SH SYNOPSIS' "$page" && grep -q '^\.SH DESCRIPTION' "$page" \
        || die "$page has no SYNOPSIS or DESCRIPTION (help2man of $t --help)"
      echo "$t: man page $page"
    fi
  done
  run "$prefix/bin/rp-demo" --routees 2 --jobs 300 > "$work/demo.log" 2>&1 \
    || { cat "$work/demo.log"; die "installed rp-demo failed"; }
  tail -n 9 "$work/demo.log"
fi

printf '\ninstall test passed: pkg-config and find_package, shared and static; version policy;'
printf ' dlopen and ctypes with no environment setting; jemalloc statistics\n'
