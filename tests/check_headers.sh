#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/check_headers.sh CC INCLUDE_DIR - every public header compiles on its
# own, first in a translation unit, as C11 with the project's warnings (a
# user may include any one of them alone).
set -eu
cc=$1 inc=$2 rc=0
for h in "$inc"/routepool/*.h; do
  name=routepool/$(basename "$h")
  if ! printf '#include "%s"\n' "$name" |
       "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c - ; then
    echo "FAIL: $name does not compile on its own" >&2
    rc=1
  fi
done
[ "$rc" -eq 0 ] && echo "every public header compiles on its own"
exit "$rc"
