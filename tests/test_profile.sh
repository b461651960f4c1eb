#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/test_profile.sh - rp-profile end to end, on traces of real workloads
# (tests/trace_workload.c):
#   - an imbalanced workload (one heavy key pinned to one routee): the trace
#     and rp-profile's --json report are valid JSON (python3 -m json.tool),
#     and the report names the routee that ran the key as the hot one;
#     --html and --svg write self-contained reports;
#   - a balanced workload (round-robin, uniform jobs, stealing): Jain's index
#     averages above 0.8 and no routee is hot;
#   - RP_TRACE=path traces a program that never calls the trace API;
#   - the reports carry each routee's exact job counts (jobs_exact, jobs_run
#     summing to the jobs the workload ran);
#   - '-' writes --svg or --html to standard output (instead of the text
#     report);
#   - the exit codes: 2 for bad usage (the message names the option), 1 for
#     a missing, malformed or empty trace, 3 for an unwritable report.
#
# Usage: test_profile.sh RP_PROFILE TRACE_WORKLOAD OUTDIR
# The traces and reports stay in OUTDIR for a look after a failure.
set -eu

PROFILE=$1
WORKLOAD=$2
OUT=$3

fail() {
  echo "test_profile: FAIL: $*" >&2
  exit 1
}

step() {
  echo "test_profile: $*"
}

command -v python3 >/dev/null 2>&1 ||
  fail "python3 is needed to validate the JSON (scripts/install-deps.sh installs it)"

rm -rf "$OUT"
mkdir -p "$OUT"

json_ok() {
  python3 -m json.tool "$1" >/dev/null 2>"$OUT/json.err" ||
    fail "$1 is not valid JSON: $(cat "$OUT/json.err")"
}

# field FILE KEY: a top-level value of a JSON file, as JSON ("null", "2", ...).
field() {
  python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2"
}

# expect_exit CODE WHAT COMMAND...: run, compare the exit code.
expect_exit() {
  want=$1
  what=$2
  shift 2
  rc=0
  "$@" >"$OUT/cmd.out" 2>"$OUT/cmd.err" || rc=$?
  [ "$rc" -eq "$want" ] ||
    fail "$what: exit code $rc, expected $want; stderr: $(cat "$OUT/cmd.err")"
}

# ---- an imbalanced workload names its hot routee ----
step "imbalanced workload"
"$WORKLOAD" imbalanced "$OUT/imbalanced.json" >"$OUT/imbalanced.out" ||
  fail "trace_workload imbalanced failed"
owner=$(sed -n 's/^hot_routee //p' "$OUT/imbalanced.out")
[ -n "$owner" ] || fail "trace_workload did not say which routee owns the key"
json_ok "$OUT/imbalanced.json"
"$PROFILE" --json "$OUT/imbalanced.json" >"$OUT/imbalanced.report.json" ||
  fail "rp-profile --json failed on the imbalanced trace"
json_ok "$OUT/imbalanced.report.json"
hot=$(field "$OUT/imbalanced.report.json" hot_routee)
[ "$hot" = "$owner" ] ||
  fail "hot_routee is $hot, but the heavy key ran on routee $owner"
python3 - "$OUT/imbalanced.report.json" <<'EOF' || fail "imbalanced report: unexpected figures"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["jain_mean"] < 0.6, r["jain_mean"]
assert r["cv_mean"] > 1.0, r["cv_mean"]
assert len(r["routees"]) == 4
assert 1 <= len(r["worst_intervals"]) <= 5
assert r["worst_intervals"][0]["deepest_routee"] == r["hot_routee"]
for k in ("mean_depth", "max_depth", "utilisation", "job_share", "stole", "stolen_from"):
    assert k in r["routees"][0], k
# The trace ends with each routee's exact counts: 1500 ticks x 3 jobs.
assert all(x["jobs_exact"] for x in r["routees"]), r["routees"]
assert sum(x["jobs_run"] for x in r["routees"]) == 4500, [x["jobs_run"] for x in r["routees"]]
assert abs(sum(x["job_share"] for x in r["routees"]) - 1) < 1e-9
assert sum(x["stole"] for x in r["routees"]) == sum(x["stolen_from"] for x in r["routees"])
EOF
"$PROFILE" --html "$OUT/imbalanced.html" --svg "$OUT/imbalanced.svg" "$OUT/imbalanced.json" \
  >"$OUT/imbalanced.txt" || fail "rp-profile --html --svg failed"
grep -q "^hot routee: r$owner " "$OUT/imbalanced.txt" || fail "the text report names no hot r$owner"
grep -q "<svg" "$OUT/imbalanced.html" || fail "the HTML report has no <svg"
! grep -Eq "<script|src=|<link|@import|https:" "$OUT/imbalanced.html" ||
  fail "the HTML report is not self-contained (script, external resource)"
python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$OUT/imbalanced.svg" ||
  fail "the SVG report is not well-formed XML"

# ---- a balanced workload is fair ----
step "balanced workload"
"$WORKLOAD" balanced "$OUT/balanced.json" || fail "trace_workload balanced failed"
json_ok "$OUT/balanced.json"
"$PROFILE" --json "$OUT/balanced.json" >"$OUT/balanced.report.json" ||
  fail "rp-profile --json failed on the balanced trace"
json_ok "$OUT/balanced.report.json"
python3 - "$OUT/balanced.report.json" <<'EOF' || fail "balanced workload: not fair enough"
import json, sys
r = json.load(open(sys.argv[1]))
print("test_profile: balanced: jain_mean %.3f, cv_mean %.3f, hot %s"
      % (r["jain_mean"], r["cv_mean"], r["hot_routee"]))
assert r["jain_mean"] > 0.8, r["jain_mean"]
assert r["hot_routee"] is None, r["hot_routee"]
assert sum(x["jobs_run"] for x in r["routees"]) == 2000, [x["jobs_run"] for x in r["routees"]]
EOF

# ---- RP_TRACE on a program that does not know about tracing ----
step "RP_TRACE"
RP_TRACE="$OUT/env-%p.json" "$WORKLOAD" plain || fail "trace_workload plain failed"
set -- "$OUT"/env-*.json
[ $# -eq 1 ] && [ -f "$1" ] || fail "RP_TRACE=$OUT/env-%p.json wrote $# files: $*"
json_ok "$1"
"$PROFILE" "$1" >"$OUT/env.txt" || fail "rp-profile failed on the RP_TRACE trace"
"$PROFILE" - <"$1" >/dev/null || fail "rp-profile - (standard input) failed"

# ---- '-' is standard output for --html and --svg ----
step "reports on standard output"
"$PROFILE" --svg - "$OUT/imbalanced.json" >"$OUT/stdout.svg" || fail "rp-profile --svg - failed"
python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$OUT/stdout.svg" ||
  fail "--svg - did not write one well-formed SVG to standard output"
[ ! -e ./- ] || fail "--svg - wrote a file named '-'"
"$PROFILE" --html - "$OUT/imbalanced.json" >"$OUT/stdout.html" || fail "rp-profile --html - failed"
head -c 15 "$OUT/stdout.html" | grep -q "<!DOCTYPE html>" ||
  fail "--html - did not start standard output with the HTML page"
! grep -q "^hot routee:" "$OUT/stdout.html" || fail "--html - mixed the text report in"
"$PROFILE" --svg "$OUT/also.svg" - <"$OUT/imbalanced.json" >/dev/null ||
  fail "reading the trace from standard input with --svg FILE failed"

# ---- exit codes ----
step "exit codes"
good=$OUT/imbalanced.json
expect_exit 0 "--help" "$PROFILE" --help
grep -q "Exit status" "$OUT/cmd.out" || fail "--help does not document the exit status"
expect_exit 0 "--version" "$PROFILE" --version
expect_exit 2 "unknown option" "$PROFILE" --bogus "$good"
grep -q -- "--bogus" "$OUT/cmd.err" || fail "the usage error does not name --bogus"
expect_exit 2 "bad --window" "$PROFILE" --window abc "$good"
grep -q -- "--window" "$OUT/cmd.err" || fail "the usage error does not name --window"
expect_exit 2 "bad --worst" "$PROFILE" --worst 2.5 "$good"
expect_exit 2 "--html without a file" "$PROFILE" "$good" --html
expect_exit 2 "no trace" "$PROFILE"
expect_exit 2 "two traces" "$PROFILE" "$good" "$good"
expect_exit 1 "missing file" "$PROFILE" "$OUT/no-such-trace.json"
head -c 4000 "$good" >"$OUT/truncated.json"
expect_exit 1 "truncated trace" "$PROFILE" "$OUT/truncated.json"
grep -q "line" "$OUT/cmd.err" || fail "the parse error does not name the line"
printf '{"traceEvents":[]}\n' >"$OUT/empty.json"
expect_exit 1 "trace without samples" "$PROFILE" "$OUT/empty.json"
expect_exit 3 "unwritable --html" "$PROFILE" --html "$OUT/no-such-dir/r.html" "$good"
expect_exit 2 "--html - and --svg -" "$PROFILE" --html - --svg - "$good"
grep -q "standard output" "$OUT/cmd.err" || fail "the usage error does not say why"
expect_exit 2 "--json and --svg -" "$PROFILE" --json --svg - "$good"
if [ -w /dev/full ]; then
  expect_exit 3 "--svg - on a full standard output" sh -c '"$1" --svg - "$2" >/dev/full' sh \
    "$PROFILE" "$good"
fi

step "ok"
