#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/test_demo.sh - rp-demo's command line, run as a user runs it
# (issue 17: the tools agree with each other).
#
#   test_demo.sh RP_DEMO
#
# rp-demo speaks rp-tune's language: --routees for the pool size, --load
# as a fraction (or a percent written 80%), --version with the library's
# version, and the same messages for a bad command line (exit 2, the
# option named).  .ci/run's demo_smoke runs the accounting check and its
# bad inputs too; they are repeated here so ctest covers them.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 RP_DEMO" >&2
  exit 2
fi
demo=$1

work=$(mktemp -d "${TMPDIR:-/tmp}/test_demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
ok() { printf 'ok: %s\n' "$*"; }

# expect_usage TEXT ARGS...: exit status 2, TEXT in the message, nothing on stdout.
expect_usage() {
  local text=$1 rc=0
  shift
  "$demo" "$@" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "rp-demo $*: exit status $rc, expected 2 ($(cat "$work/err"))"
  grep -qF -- "$text" "$work/err" || fail "rp-demo $*: the message does not say '$text': $(cat "$work/err")"
  grep -qF "Try 'rp-demo --help'." "$work/err" || fail "rp-demo $*: no pointer to --help"
  [ ! -s "$work/out" ] || fail "rp-demo $*: printed on stdout: $(cat "$work/out")"
}

# .ci/run's bad inputs.
expect_usage --routees --routees 0
expect_usage --jobs --jobs x
expect_usage --seed --seed -1
expect_usage --load --load 101
expect_usage "'--bogus'" --bogus
expect_usage "'extra'" extra
# --load is a fraction, as in rp-tune; the old percent says how to write it.
expect_usage "write 0.8 or 80%" --load 80
expect_usage --load --load 0.5x
expect_usage --load --load -0.1
# A flag given a value, a value missing, a short option rp-demo lacks.
expect_usage "'--no-steal' takes no value" --no-steal=1
expect_usage "'--jobs' needs a value" --jobs
expect_usage "unknown option '-r'" -r 3
ok "bad arguments exit 2 and name the option"

"$demo" --version >"$work/out" || fail "--version: exit status $?"
grep -q '^rp-demo (routepool) [0-9]' "$work/out" || fail "--version: $(cat "$work/out")"
grep -q '^libroutepool [0-9]' "$work/out" || fail "--version: no library version: $(cat "$work/out")"
"$demo" -V >/dev/null || fail "-V: exit status $?"
"$demo" --help >"$work/out" || fail "--help: exit status $?"
grep -q -- '-n, --routees N' "$work/out" || fail "--help: no --routees"
grep -q -- '-l, --load F' "$work/out" || fail "--help: no --load F"
ok "--version prints the tool's and the library's version; --help lists --routees and --load F"

# The smoke run of .ci/run, and the spellings shared with rp-tune.
"$demo" --routees 3 --jobs 3000 --seed 7 >"$work/out" || fail "--routees 3 --jobs 3000 --seed 7: exit status $?"
grep -q '^pool: 3 routees' "$work/out" || fail "--routees 3: $(head -n 5 "$work/out")"
grep -q '^submitting: at load 0.8 (80% ' "$work/out" || fail "default load: $(head -n 5 "$work/out")"
"$demo" -n 2 --jobs 500 --load 50% >"$work/out" || fail "-n 2 --load 50%: exit status $?"
grep -q '^pool: 2 routees' "$work/out" || fail "-n 2: $(head -n 5 "$work/out")"
grep -q '^submitting: at load 0.5 (50% ' "$work/out" || fail "--load 50%: $(head -n 5 "$work/out")"
"$demo" --routees 2 --jobs 500 --load 0 >"$work/out" || fail "--load 0: exit status $?"
grep -q '^submitting: as fast as one thread can' "$work/out" || fail "--load 0: $(head -n 5 "$work/out")"
ok "every job accounted for with --routees, -n, --load 0.5, 50% and 0"
