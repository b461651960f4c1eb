#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/dispatch-callgrind.sh - instructions per routing decision, counted by
# callgrind (deterministic, unlike the ns of rp-bench-dispatch).
#
#   bench/dispatch-callgrind.sh [--quick] [--decisions D] [--sizes LIST] [--bin PATH]
#
# For each pool size it runs, once,
#   valgrind --tool=callgrind --instr-atstart=no rp-bench-dispatch --callgrind D --sizes N
# The program builds the real pool (healthy, then saturated) with
# instrumentation off, and wraps each cell - one strategy, one state, D
# decisions - in CALLGRIND_ZERO_STATS ... CALLGRIND_DUMP_STATS_AT("<cell>"),
# so every cell gets a dump of its own with only its loop counted.  This
# script reads the dumps' "summary:" (Ir) and prints Ir / D per cell (the
# median of the program's five counts of each cell) as
# markdown tables, the least-squares slope over pool sizes (instructions per
# extra routee), and the two targets of issue 7:
#   smallest-mailbox on a healthy 64-routee pool <= 1.5x round-robin;
#   smallest-mailbox on a saturated pool is O(n): its slope.
# With RP_BENCH_CSV set, every number is appended there as a CSV row
# (bench,case,metric,unit,median,min,max,reps; bench "dispatch", unit "instr").
#
# Options: --quick (D=1000), --decisions D (default 5000), --sizes LIST
# (default 2,8,64,256,1024), --bin PATH (default: rp-bench-dispatch in
# $BUILD_DIR, build-bench/, build-disp/ or build/ under the checkout).
# Exit status: 0 ok, 1 a run failed, 2 bad command line.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
decisions=5000
sizes=2,8,64,256,1024
bin=""

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) decisions=1000 ;;
    --decisions) [ $# -ge 2 ] || { echo "--decisions needs a value" >&2; exit 2; }
                 decisions=$2; shift ;;
    --sizes) [ $# -ge 2 ] || { echo "--sizes needs a value" >&2; exit 2; }
             sizes=$2; shift ;;
    --bin) [ $# -ge 2 ] || { echo "--bin needs a value" >&2; exit 2; }
           bin=$2; shift ;;
    *) echo "unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$decisions" in ''|*[!0-9]*) echo "--decisions: expected a positive integer (got '$decisions')" >&2; exit 2 ;; esac
[ "$decisions" -ge 1 ] || { echo "--decisions: expected a positive integer" >&2; exit 2; }
case "$sizes" in ''|*[!0-9,]*|,*|*,|*,,*) echo "--sizes: expected a comma list of integers (got '$sizes')" >&2; exit 2 ;; esac

if [ -z "$bin" ]; then
  for d in "${BUILD_DIR:-}" "$root/build-bench" "$root/build-disp" "$root/build"; do
    if [ -n "$d" ] && [ -x "$d/bench/rp-bench-dispatch" ]; then bin="$d/bench/rp-bench-dispatch"; break; fi
  done
fi
[ -n "$bin" ] && [ -x "$bin" ] || { echo "rp-bench-dispatch not found: build with -DRP_BUILD_BENCH=ON or pass --bin" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)" >&2; exit 2; }

out=$(mktemp -d "${TMPDIR:-/tmp}/rp-dispatch-cg.XXXXXX")
trap 'rm -rf "$out"' EXIT

echo "# dispatch-callgrind: $(valgrind --version), $decisions decisions per cell, binary $bin"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs;" \
     "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# Ir per decision includes the benchmark loop (route-state setup, index increment, sink):"
echo "#   pick = rp_strategy_pick() over the real pool's routees (consistent-hash: + XXH3 of the key);"
echo "#   tell = rp_router_tell()/_tell_key() on the saturated pool (pick + enqueue)."

IFS=, read -r -a size_list <<<"$sizes"
for n in "${size_list[@]}"; do
  t0=$(date +%s.%N)
  # Threads: n routees, the pool's timer, main, and headroom.
  if ! valgrind --tool=callgrind --instr-atstart=no --max-threads=$((n + 64)) \
       --callgrind-out-file="$out/cg.$n.%p" "$bin" --callgrind "$decisions" --sizes "$n" \
       >"$out/log.$n" 2>&1; then
    echo "valgrind run for $n routees failed:" >&2
    tail -20 "$out/log.$n" >&2
    exit 1
  fi
  printf '# %s routees: %.1f s under callgrind\n' "$n" "$(echo "$(date +%s.%N) - $t0" | bc)"
done

# One line per dumped cell: what strategy state n decisions Ir.
for f in "$out"/cg.*.*; do
  awk '/^desc: Trigger: Client Request: /{sub(/^desc: Trigger: Client Request: /, ""); name=$0}
       /^summary: /{ir=$2}
       END{if (name != "") {gsub(/\|/, " ", name); print name, ir}}' "$f"
done >"$out/cells"

[ -s "$out/cells" ] || { echo "no callgrind dumps found (was the binary built with <valgrind/callgrind.h>?)" >&2; exit 1; }

awk -v sizes="$sizes" -v csv="${RP_BENCH_CSV:-}" '
function row(cas, metric, unit, v, lo, hi, reps) {
  if (reps == "") { lo = v; hi = v; reps = 1 }
  if (csv == "") return
  if (!header_done) {
    # The header only when the file is empty, as bench_csv_row() does.
    if ((getline line < csv) <= 0) print "bench,case,metric,unit,median,min,max,reps" >> csv
    close(csv); header_done = 1
  }
  printf "dispatch,%s,%s,%s,%.6g,%.6g,%.6g,%d\n", cas, metric, unit, v, lo, hi, reps >> csv
}
function fit(what, s, st,    i, mx, my, sxy, sxx, k) {
  mx = my = sxy = sxx = 0; k = 0
  for (i = 1; i <= ns; i++) if ((what, s, st, sz[i]) in ipd) { mx += sz[i]; my += ipd[what, s, st, sz[i]]; k++ }
  if (k < 2) return 0
  mx /= k; my /= k
  for (i = 1; i <= ns; i++) if ((what, s, st, sz[i]) in ipd) {
    sxy += (sz[i] - mx) * (ipd[what, s, st, sz[i]] - my); sxx += (sz[i] - mx) ^ 2 }
  return sxx > 0 ? sxy / sxx : 0
}
function table(what, st, title,    i, j, s, v, sl, k) {
  printf "\n%s\n\n| strategy |", title
  for (i = 1; i <= ns; i++) printf " %s |", sz[i]
  printf " slope instr/routee |\n|---|"
  for (i = 0; i <= ns; i++) printf "---:|"
  printf "\n"
  for (j = 1; j <= nst; j++) {
    s = strat[j]
    printf "| %s |", s
    for (i = 1; i <= ns; i++) {
      if ((what, s, st, sz[i]) in ipd) {
        v = ipd[what, s, st, sz[i]]; printf " %.1f |", v
        k = what SUBSEP s SUBSEP st SUBSEP sz[i]
        row(what " " s " " st " " sz[i] " routees", "instr/decision", "instr", v, lo[k], hi[k], cnt[k])
      } else printf " - |"
    }
    sl = fit(what, s, st); slope[what, s, st] = sl
    printf " %.3f |\n", sl
    if (ns >= 2) row(what " " s " " st " slope", "instr/routee", "instr", sl)
  }
}
# Fields: what strategy state n decisions rep Ir.  Keep the median of the reps.
{ key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; cnt[key]++; val[key, cnt[key]] = $7 / $5 }
function median(key,    m, i, j, t, a) {
  m = cnt[key]
  for (i = 1; i <= m; i++) a[i] = val[key, i]
  for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  lo[key] = a[1]; hi[key] = a[m]
  return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
  for (key in cnt) ipd[key] = median(key)
  ns = split(sizes, sz, ",")
  nst = split("round-robin random smallest-mailbox consistent-hash weighted", strat, " ")
  table("pick", "healthy", "pick, healthy pool: instructions per decision (callgrind Ir / decisions)")
  table("pick", "saturated", "pick, saturated pool: instructions per decision")
  table("tell", "saturated", "tell (pick + enqueue), saturated pool: instructions per job")
  print ""
  if (("pick", "smallest-mailbox", "healthy", 64) in ipd && ("pick", "round-robin", "healthy", 64) in ipd) {
    r = ipd["pick", "smallest-mailbox", "healthy", 64] / ipd["pick", "round-robin", "healthy", 64]
    printf "Target: smallest-mailbox / round-robin instructions, healthy 64 routees = %.2fx (target <= 1.5x): %s\n",
           r, r <= 1.5 ? "MET" : "NOT MET"
    row("pick smallest-mailbox/round-robin healthy 64 routees", "instr ratio", "x", r)
  } else print "Target (healthy 64, <= 1.5x): not measured (64 not in --sizes)"
  if (ns >= 2) {
    printf "Saturated smallest-mailbox is O(n): %.2f instructions per extra routee (least-squares over %s routees)",
           slope["pick", "smallest-mailbox", "saturated"], sizes
    printf "; healthy: %.3f\n", slope["pick", "smallest-mailbox", "healthy"]
  }
  print "Each cell is the median of 5 counts (CSV: min and max too).  Weighted picks and tells differ"
  print "between the counts for a reason: each continues the message index, so it visits other slots,"
  print "routees and depths; the rest agree within a few Ir per cell unless a count hit the outlier"
  print "described in bench/dispatch.c (cg_cell)."
}' "$out/cells"
