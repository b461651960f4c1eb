#!/bin/sh
# SPDX-License-Identifier: MIT
# check_promtool.sh TEST_METRICS PROMTOOL - lint routepool's Prometheus
# exposition with promtool (Debian package prometheus).
#
# test_metrics's exposition/is_written_for_external_checkers builds a pool
# that went through runs, steals, drops and a scatter, checks its text with
# the strict checker of test_metrics.c and writes it to RP_METRICS_PROM_OUT;
# `promtool check metrics` then parses and lints it (exit 0: clean; 1: parse
# error; 3: lint problems, e.g. a counter without _total).
set -eu
bin=$1
promtool=$2
out=$(mktemp "${TMPDIR:-/tmp}/rp-metrics.XXXXXX")
trap 'rm -f "$out"' EXIT
RP_METRICS_PROM_OUT=$out "$bin" --jobs 1 \
    --filter 'exposition/is_written_for_external_checkers'
if [ ! -s "$out" ]; then
    echo "check_promtool.sh: test_metrics wrote no exposition to $out" >&2
    exit 1
fi
echo "promtool check metrics < exposition ($(wc -l < "$out") lines)"
"$promtool" check metrics < "$out"
