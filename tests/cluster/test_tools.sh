#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cluster/test_tools.sh RP_NODE RP_CLUSTER JOBS_PLUGIN [RP_TUNE] - rp-node
# and rp-cluster end to end against a real redis-server (docs/cluster.md).
#
# Starts redis-server on a free loopback port in the foreground of a
# background job (pid kept, killed by pid at exit; nothing persisted), then
# checks: --help/--version and the exit codes of bad command lines (2) and of
# runtime failures (1); two rp-nodes with tests/cluster/jobs_plugin.c's
# handlers; status --json; submit and ask (binary payload from a file and
# from stdin, the handler's failure and an unknown handler carried back);
# --router weighted: exact shares of submit --count N through one router,
# and every malformed --weights list refused with exit 2;
# /metrics (Prometheus text parsed with python3-prometheus-client, node
# label); a node id taken (RP_EEXIST); poison entries in the dead-letter
# stream, dead list/drop/retry; an ACL user confined to one prefix refused
# another prefix with NOPERM; a graceful leave on SIGTERM (exit 0, the
# plugin unloaded); rp-cluster demo --quick; and, given RP_TUNE, that the
# same plugin .so runs as an rp-tune --job plugin (both ABIs in one file).  Every node process is
# started by this script and killed by its pid.  No sleeps as
# synchronisation: every wait polls a condition with a generous deadline.
set -euo pipefail

NODE=$1 CLUSTER=$2 PLUGIN=$3 TUNE=${4:-}
tmp=$(mktemp -d)
pids=()

cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*.err; do [ -s "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done; exit 1; }
pass() { echo "ok - $*"; }

# expect STATUS NAME CMD...: run CMD (stdout to $tmp/out, stderr to $tmp/err).
expect() {
  local want=$1 name=$2 got=0
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
  [ "$got" -eq "$want" ] || { cat "$tmp/err" >&2; fail "$name: exit status $got, wanted $want"; }
  pass "$name (exit $want)"
}

# wait_for SECONDS NAME CMD...: poll CMD every 50 ms until it succeeds.
wait_for() {
  local secs=$1 name=$2 i
  shift 2
  for ((i = 0; i < secs * 20; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  fail "timed out waiting for: $name"
}

command -v redis-server >/dev/null || fail "redis-server is not in PATH (CI installs it)"
# Debian's python3 (python3-prometheus-client); a python3 earlier in PATH
# (pyenv, a venv) may lack the module.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || fail "python3 is not installed"
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
pids+=($!)
wait_for 10 "redis-server to answer PING" redis-cli -p "$port" ping
R=127.0.0.1:$port
RC=("$CLUSTER" --redis "$R")

# ---- help, version, exit codes ----
"$NODE" --help | grep -q '^usage: rp-node' || fail "rp-node --help"
"$NODE" --version | grep -q '^rp-node [0-9]' || fail "rp-node --version"
"$CLUSTER" --help | grep -q '^usage: rp-cluster' || fail "rp-cluster --help"
"$CLUSTER" --version | grep -q '^rp-cluster [0-9]' || fail "rp-cluster --version"
pass "--help and --version"
expect 2 "rp-node without --plugin" "$NODE" --redis "$R"
expect 2 "rp-node --routees 0" "$NODE" --plugin "$PLUGIN" --routees 0
expect 2 "rp-node --metrics-port 70000" "$NODE" --plugin "$PLUGIN" --metrics-port 70000
expect 2 "rp-node with a stray argument" "$NODE" --plugin "$PLUGIN" extra
expect 2 "rp-node --password-file missing" "$NODE" --plugin "$PLUGIN" --password-file "$tmp/none"
expect 2 "rp-cluster without a command" "$CLUSTER"
expect 2 "rp-cluster unknown command" "$CLUSTER" frobnicate
expect 2 "rp-cluster --timeout-ms abc" "$CLUSTER" --timeout-ms abc status
expect 2 "rp-cluster dead retry without id" "$CLUSTER" dead retry
expect 2 "rp-cluster ask without handler" "$CLUSTER" ask
expect 2 "rp-cluster --payload with --payload-file" "$CLUSTER" --payload x --payload-file - ask echo
expect 2 "rp-cluster --router bogus" "$CLUSTER" --router bogus ask echo
expect 2 "rp-cluster --node with --router" "$CLUSTER" --node a --router random ask echo
# --router weighted's --weights ID=W,...: every malformed list is a bad
# command line (exit 2, a message naming --weights), refused before Redis
# is reached (the address is unreachable: exit 1 would mean it got there).
long_id=$(printf 'x%.0s' $(seq 129))
many=$(for i in $(seq 4097); do printf 'n%d=1,' "$i"; done)
bad_weights=("" "a" "a=" "=3" "a=3," ",a=3" "a=3,,b=1" "a=x" "a=3x" "a= 3" " a=3" "a=+3" "a=0x3" "a=0"
  "a=-1" "a=1000001" "a=4294967297" "a=99999999999999999999999" "a=1,a=2" "a=1,b=2,a=3" "a/b=1"
  "a b=1" "$long_id=1" "a=b=1" "a=3;b=1" "${many%,}")
for w in "${bad_weights[@]}"; do
  expect 2 "rp-cluster --weights '${w:0:40}'" "$CLUSTER" --redis 127.0.0.1:1 --router weighted --weights "$w" submit echo --payload x
  grep -q -- '--weights' "$tmp/err" || fail "--weights '${w:0:40}': no message naming --weights: $(cat "$tmp/err")"
done
grep -q 'listed twice' <("$CLUSTER" --router weighted --weights a=1,b=2,a=3 submit echo 2>&1) ||
  fail "a duplicate id: no 'listed twice'"
expect 2 "rp-cluster --router weighted without --weights" "$CLUSTER" --router weighted submit echo --payload x
grep -q 'needs --weights' "$tmp/err" || fail "weighted without --weights: $(cat "$tmp/err")"
expect 2 "rp-cluster --weights without --router weighted" "$CLUSTER" --router round-robin --weights a=1 submit echo --payload x
expect 2 "rp-cluster --weights without --router" "$CLUSTER" --weights a=1 submit echo --payload x
expect 2 "rp-cluster --router custom (library only)" "$CLUSTER" --router custom submit echo --payload x
grep -q 'RP_CLUSTER_ROUTER_CUSTOM' "$tmp/err" || fail "--router custom: $(cat "$tmp/err")"
expect 2 "rp-cluster --count 0" "$CLUSTER" --count 0 submit echo --payload x
expect 2 "rp-cluster --count 1000001" "$CLUSTER" --count 1000001 submit echo --payload x
expect 2 "rp-cluster --count with ask" "$CLUSTER" --count 2 ask echo --payload x
expect 1 "rp-cluster --router weighted with good weights, Redis unreachable" "$CLUSTER" --redis 127.0.0.1:1 \
  --router weighted --weights 'a=1000000,host-1.x_y:123=01' submit echo --payload x
expect 1 "rp-node, Redis unreachable" "$NODE" --redis 127.0.0.1:1 --plugin "$PLUGIN"
expect 1 "rp-cluster status, Redis unreachable" "$CLUSTER" --redis 127.0.0.1:1 status
expect 1 "rp-node, plugin file missing" "$NODE" --redis "$R" --prefix t --plugin "$tmp/none.so"
expect 1 "rp-node, plugin refuses to register" "$NODE" --redis "$R" --prefix t --plugin "$PLUGIN" --plugin-arg refuse
expect 1 "rp-cluster ask with no live node" "${RC[@]}" --prefix empty ask echo --payload x

# ---- two nodes ----
# start_node PREFIX ID [extra rp-node options]: background rp-node, wait for "ready".
# The output file is emptied here, before the node starts: the shell opens
# (and truncates) a background job's redirection in the child, after the
# fork, so without this a restarted node's wait could find the previous
# run's "ready" line (a bash loop read the old line in 12 of 200 starts
# here) and send before the new node had joined - to an inbox the survivors
# had already removed (RP_ENOROUTEE).
start_node() {
  local prefix=$1 id=$2
  shift 2
  : >"$tmp/$id.out"
  "$NODE" --redis "$R" --prefix "$prefix" --plugin "$PLUGIN" --plugin-arg "log=$tmp/$id.log" \
    --id "$id" --routees 2 --heartbeat-ms 50 --dead-after-ms 1000 "$@" \
    >"$tmp/$id.out" 2>"$tmp/$id.err" &
  pids+=($!)
  eval "pid_$id=$!"
  wait_for 20 "node $id ready" grep -q '^ready ' "$tmp/$id.out"
  # "ready" means joined: the node's inbox exists and it is in the member
  # set now, not after a retry.
  [ "$(redis-cli -p "$port" eval "return redis.call('exists', KEYS[1]) + redis.call('sismember', KEYS[2], ARGV[1])" 2 "$prefix:inbox:$id" "$prefix:nodes" "$id")" = 2 ] ||
    fail "node $id printed ready but its inbox or membership is missing"
}
start_node t a --metrics-port 0
start_node t b
grep -q "^ready id=a prefix=t handlers=echo,fail,sleep,crash,count metrics=[0-9]" "$tmp/a.out" ||
  fail "ready line: $(cat "$tmp/a.out")"
pass "two nodes ready"

expect 1 "a second node with a live node's id" "$NODE" --redis "$R" --prefix t --plugin "$PLUGIN" --id a
grep -q RP_EEXIST "$tmp/err" || fail "taken id: no RP_EEXIST in: $(cat "$tmp/err")"

status_ok() {
  "${RC[@]}" --prefix t status --json | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
nodes = {n["id"]: n for n in s["nodes"]}
assert set(nodes) == {"a", "b"}, nodes
for n in nodes.values():
    assert n["state"] == "live" and n["lease"] and n["report_age_ms"] >= 0 and n["depth"] >= 0, n
assert s["prefix"] == "t" and s["dead_letters"] == 0, s
'
}
wait_for 10 "status --json: a and b live" status_ok
"${RC[@]}" --prefix t status | grep -q '^deployment t: 2 node(s)' || fail "status table"
pass "status and status --json"

# ---- ask and submit ----
head -c 4096 /dev/urandom >"$tmp/blob"
expect 0 "ask echo, binary payload from a file" "${RC[@]}" --prefix t ask echo --payload-file "$tmp/blob"
cmp -s "$tmp/out" "$tmp/blob" || fail "ask echo: the reply differs from the payload"
expect 0 "ask echo, payload from stdin, to node b" sh -c "printf 'hi\\000there' | $(printf '%q ' "${RC[@]}") --prefix t --node b ask echo"
[ "$(od -An -c "$tmp/out" | tr -d ' \n')" = 'hi\0there' ] || fail "stdin payload: $(od -c "$tmp/out")"
expect 0 "ask --json" "${RC[@]}" --prefix t --node a --json ask echo --payload 'q"x'
"$PY" -c 'import json,sys; r = json.load(open(sys.argv[1])); assert r["ok"] and r["node"] == "a" and r["reply"] == "q\"x", r' "$tmp/out" ||
  fail "ask --json output: $(cat "$tmp/out")"
for kind in round-robin random smallest-mailbox least-used weighted; do
  w=(); [ "$kind" = weighted ] && w=(--weights a=1,b=2)
  expect 0 "ask echo through a $kind router" "${RC[@]}" --prefix t --router "$kind" "${w[@]}" ask echo --payload "via-$kind"
  [ "$(cat "$tmp/out")" = "via-$kind" ] || fail "$kind router: reply $(cat "$tmp/out")"
done
expect 0 "submit through a consistent-hash router with a key" "${RC[@]}" --prefix t --router consistent-hash --key k1 submit echo --payload keyed
expect 0 "submit through a broadcast router" "${RC[@]}" --prefix t --router broadcast --json submit echo --payload all
grep -q '"router":"broadcast"' "$tmp/out" || fail "broadcast submit --json: $(cat "$tmp/out")"
expect 1 "ask through a broadcast router (refused)" "${RC[@]}" --prefix t --router broadcast ask echo --payload x
expect 1 "ask a failing handler" "${RC[@]}" --prefix t ask fail --payload xyz
grep -q 'failed on purpose: xyz' "$tmp/err" || fail "fail: message not carried: $(cat "$tmp/err")"
expect 1 "ask an unknown handler" "${RC[@]}" --prefix t ask nosuch --payload x
grep -q RP_ENOHANDLER "$tmp/err" || fail "unknown handler: $(cat "$tmp/err")"
expect 1 "ask that times out" "${RC[@]}" --prefix t --timeout-ms 200 ask sleep --payload 3000
grep -q RP_ETIMEDOUT "$tmp/err" || fail "timeout: $(cat "$tmp/err")"
head -c 2000000 /dev/zero >"$tmp/big"
expect 1 "submit over the payload cap" "${RC[@]}" --prefix t submit echo --payload-file "$tmp/big"
for i in $(seq 1 10); do
  "${RC[@]}" --prefix t --node a submit count --payload "$i" >/dev/null || fail "submit $i to a"
  "${RC[@]}" --prefix t --node b submit count --payload "$i" >/dev/null || fail "submit $i to b"
done
count_runs() { cat "$tmp/a.log" "$tmp/b.log" 2>/dev/null | grep -c '^count ' || true; }
runs_are() { [ "$(count_runs)" -eq "$1" ]; }
wait_for 20 "20 submitted count jobs to run" runs_are 20
[ "$(grep -c '^count ' "$tmp/a.log")" -eq 10 ] || fail "node a ran $(grep -c '^count ' "$tmp/a.log") of its 10"
pass "submit: 10 jobs to each node ran exactly there"

# ---- weighted shares ----
# Each rp-cluster process has a router of its own, whose sequence starts at
# the first node; --count N sends N jobs through that one router, so the
# shares are exact (cluster.h: node i gets weight(i) of every W = sum of
# weights consecutive jobs).  Each batch runs to the end before the next.
count_on() { grep -c '^count ' "$tmp/$1.log" || true; }
weighted_batch() { # WEIGHTS COUNT WANT_A WANT_B
  local a0 b0
  a0=$(count_on a) b0=$(count_on b)
  expect 0 "submit $2 x count through a weighted router, --weights $1" "${RC[@]}" --prefix t \
    --router weighted --weights "$1" --count "$2" submit count --payload w
  grep -qx "submitted $2 x count (1 bytes each) via weighted" "$tmp/out" || fail "weighted submit: $(cat "$tmp/out")"
  wait_for 20 "the $2 weighted jobs to run" runs_are $((a0 + b0 + $2))
  [ "$(count_on a)" -eq $((a0 + $3)) ] && [ "$(count_on b)" -eq $((b0 + $4)) ] ||
    fail "--weights $1, $2 jobs: a ran $(($(count_on a) - a0)), b $(($(count_on b) - b0)); wanted $3 and $4"
  pass "--weights $1, $2 jobs: a ran $3, b $4"
}
weighted_batch a=3,b=1 8 6 2
weighted_batch b=3,a=1 4 1 3          # the list's order does not matter: ids do
weighted_batch a=1,b=4,zz=5 10 2 8    # zz is not live: no share of its own
weighted_batch zz=7 6 3 3             # a and b are not listed: each weighs 1
expect 0 "submit --count --json through a weighted router" "${RC[@]}" --prefix t --router weighted \
  --weights a=1,b=1 --count 2 --json submit count --payload w
"$PY" -c 'import json,sys; r = json.load(open(sys.argv[1])); assert r == {"router": "weighted", "handler": "count", "bytes": 1, "count": 2}, r' "$tmp/out" ||
  fail "weighted submit --json: $(cat "$tmp/out")"
wait_for 20 "the 2 --json jobs to run" runs_are 50

# ---- /metrics ----
mport=$(sed -n 's/.* metrics=\([0-9]*\)$/\1/p' "$tmp/a.out")
"$PY" - "$mport" <<'EOF' || fail "/metrics"
import sys, urllib.request, urllib.error
from prometheus_client.parser import text_string_to_metric_families
url = "http://127.0.0.1:%s" % sys.argv[1]
text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
fams = {f.name: f for f in text_string_to_metric_families(text)}
cluster = [f for n, f in fams.items() if n.startswith("routepool_cluster_")]
assert cluster, "no routepool_cluster_ family"
assert any(not n.startswith("routepool_cluster_") for n in fams), "no pool family"
for f in cluster:
    for s in f.samples:
        assert s.labels.get("node") == "a", (f.name, s)
try:
    urllib.request.urlopen(url + "/nope", timeout=10)
    raise SystemExit("/nope answered 200")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
EOF
pass "/metrics: pool and cluster families, node label; 404 elsewhere"

# ---- poison entries and the dead-letter stream ----
# Node c crashes on "boom"; node d, a survivor with --max-deliveries 1,
# moves the entry to the dead-letter stream instead of running it again.
start_node p c --max-deliveries 1
start_node p d --max-deliveries 1
dead_count() { "${RC[@]}" --prefix p --json dead list | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
dead_are() { [ "$(dead_count)" -eq "$1" ]; }
poison_c() {
  expect 0 "submit boom to node c" "${RC[@]}" --prefix p --node c submit crash --payload boom
  wait_for 20 "node c to die on boom" sh -c "! kill -0 $pid_c 2>/dev/null"
  wait "$pid_c" 2>/dev/null || true
}
poison_c
wait_for 30 "one dead letter" dead_are 1
start_node p c --max-deliveries 1
poison_c
wait_for 30 "two dead letters" dead_are 2
expect 0 "dead list --json" "${RC[@]}" --prefix p --json dead list
"$PY" - "$tmp/out" <<'EOF' || fail "dead list content: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d) == 2 and all(e["handler"] == "crash" and e["payload"] == "boom" for e in d), d
assert all(e["deliveries"] >= 1 and e["dead_id"] for e in d), d
EOF
ids=($("$PY" -c 'import json,sys; print(" ".join(e["dead_id"] for e in json.load(open(sys.argv[1]))))' "$tmp/out"))
expect 0 "dead list (table)" "${RC[@]}" --prefix p dead list
grep -q '^2 dead letter(s) in p:dead' "$tmp/out" || fail "dead list table: $(cat "$tmp/out")"
expect 0 "dead drop" "${RC[@]}" --prefix p dead drop "${ids[0]}"
expect 1 "dead drop of an unknown id" "${RC[@]}" --prefix p dead drop 1-1
test "$(dead_count)" -eq 1 || fail "after drop: $(dead_count) dead letters"
expect 0 "dead retry to node d" "${RC[@]}" --prefix p --node d dead retry "${ids[1]}"
# The re-queued boom runs on d again, which dies of it: proof it was re-delivered.
wait_for 20 "node d to run the retried entry (and die)" sh -c "! kill -0 $pid_d 2>/dev/null"
st=0; wait "$pid_d" 2>/dev/null || st=$?
[ "$st" -eq 86 ] || fail "node d exited $st, wanted 86 (the crash handler's _exit)"
pass "poison entry: dead-lettered, listed, dropped, retried"

# ---- an ACL user confined to one prefix ----
redis-cli -p "$port" ACL SETUSER tuser on '>tpass' resetkeys '~t:*' resetchannels -@all +@read +@write \
  +@stream +@hash +@list +@sortedset +@string +@scripting +@connection +@transaction +time -@dangerous >/dev/null
printf 'tpass\n' >"$tmp/pw"
printf 'wrong\n' >"$tmp/badpw"
chmod 600 "$tmp/pw" "$tmp/badpw"
expect 0 "status as the prefix's ACL user" "${RC[@]}" --prefix t --user tuser --password-file "$tmp/pw" status
start_node t acl --user tuser --password-file "$tmp/pw"
expect 0 "ask a node running as the prefix's ACL user, as that user" "${RC[@]}" --prefix t --user tuser \
  --password-file "$tmp/pw" --node acl ask echo --payload acl
[ "$(cat "$tmp/out")" = acl ] || fail "ACL node reply: $(cat "$tmp/out")"
kill -TERM "$pid_acl"
st=0; wait "$pid_acl" || st=$?
[ "$st" -eq 0 ] || fail "ACL node: exit $st after SIGTERM (leave refused by the ACL?): $(tail -3 "$tmp/acl.err")"
! grep -q NOPERM "$tmp/acl.err" || fail "ACL node logged NOPERM: $(grep NOPERM "$tmp/acl.err" | head -3)"
expect 1 "status of another prefix as that user" "${RC[@]}" --prefix other --user tuser --password-file "$tmp/pw" status
grep -q NOPERM "$tmp/err" || fail "other prefix: no NOPERM in: $(cat "$tmp/err")"
expect 1 "rp-node on another prefix as that user" "$NODE" --redis "$R" --prefix other --user tuser \
  --password-file "$tmp/pw" --plugin "$PLUGIN" --id acl
grep -q NOPERM "$tmp/err" || fail "rp-node other prefix: no NOPERM in: $(cat "$tmp/err")"
expect 1 "a wrong password" "${RC[@]}" --prefix t --user tuser --password-file "$tmp/badpw" status
pass "ACL: the user's prefix works, another prefix is refused with NOPERM"

# ---- graceful leave ----
kill -TERM "$pid_a"
st=0; wait "$pid_a" || st=$?
[ "$st" -eq 0 ] || fail "rp-node a after SIGTERM: exit $st"
grep -q '^unload$' "$tmp/a.log" || fail "plugin not unloaded on leave"
wait_for 10 "status: a gone" sh -c "! $(printf '%q ' "${RC[@]}") --prefix t status --json | grep -q '\"id\":\"a\"'"
pass "SIGTERM: graceful leave, exit 0, plugin unloaded, node gone from status"

# ---- the same .so as an rp-tune --job plugin ----
if [ -n "$TUNE" ]; then
  expect 0 "rp-tune --job with the cluster plugin" "$TUNE" --job "$PLUGIN:jp_spin" --job-arg 50 \
    --sizes 1 --routers rr --duration 0.1
  # The plugin's job ran when the table has its row; whether rp-tune then
  # recommends depends on the machine's load (it refuses on a busy one).
  grep -Eq '^(Recommendation|No recommendation)' "$tmp/out" || fail "rp-tune output: $(tail -3 "$tmp/out")"
  grep -Eq '^ *1 +(rr|round-robin)' "$tmp/out" || fail "rp-tune printed no row for the plugin's job: $(head -20 "$tmp/out")"
fi

# ---- the demo ----
expect 0 "rp-cluster demo --quick" "$CLUSTER" demo --quick
grep -q 'nothing lost' "$tmp/out" || fail "demo: $(tail -5 "$tmp/out")"
echo "all rp-node / rp-cluster checks passed"
