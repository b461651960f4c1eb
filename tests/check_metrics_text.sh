#!/bin/sh
# SPDX-License-Identifier: MIT
# check_metrics_text.sh TEST_METRICS PYTHON3 CHECKER [PROMTOOL] - check
# routepool's Prometheus pages with checkers outside the library.
#
# test_metrics's exposition/is_written_for_external_checkers builds a pool
# that went through runs, steals, drops and a scatter, checks its text with
# the strict checker of test_metrics.c and writes it to RP_METRICS_PROM_OUT,
# and a page of two pools (one named with quotes, a backslash, a newline
# and a byte that is not UTF-8) plus an extra family to RP_METRICS_PAGE_OUT.
# Both files then go to:
#   - check_metrics_text.py: python3-prometheus-client's text parser and
#     the project's strict rules (always: the suite needs no server);
#   - promtool check metrics, only when PROMTOOL is given and executable
#     (CI installs it; exit 0 clean, 1 parse error, 3 lint problems).
set -eu
bin=$1
python=$2
checker=$3
promtool=${4:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/rp-metrics.XXXXXX")
trap 'rm -rf "$dir"' EXIT
RP_METRICS_PROM_OUT=$dir/pool.prom RP_METRICS_PAGE_OUT=$dir/page.prom "$bin" --jobs 1 \
    --filter 'exposition/is_written_for_external_checkers'
for f in "$dir/pool.prom" "$dir/page.prom"; do
    if [ ! -s "$f" ]; then
        echo "check_metrics_text.sh: test_metrics wrote nothing to $f" >&2
        exit 1
    fi
done
"$python" "$checker" "$dir/pool.prom" "$dir/page.prom"
# The checker itself: two pools' texts written one after the other (the
# HELP and TYPE repeated: what issue 17 saw) and a raw byte that is not
# UTF-8 must be refused.
cat "$dir/pool.prom" "$dir/pool.prom" > "$dir/twice.prom"
printf '# HELP routepool_x A.\n# TYPE routepool_x gauge\nroutepool_x{pool="\377"} 1\n' \
    > "$dir/bytes.prom"
for bad in twice bytes; do
    if "$python" "$checker" "$dir/$bad.prom" 2>"$dir/err"; then
        echo "check_metrics_text.sh: the checker accepted $bad.prom" >&2
        exit 1
    fi
    echo "refused as expected: $(cat "$dir/err")"
done
if [ -n "$promtool" ] && [ -x "$promtool" ]; then
    for f in "$dir/pool.prom" "$dir/page.prom"; do
        echo "promtool check metrics < $(basename "$f") ($(wc -l < "$f") lines)"
        "$promtool" check metrics < "$f"
    done
else
    echo "promtool not installed: skipped (CI runs it)"
fi
