#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/summarize.py CSV - the markdown summary table of a bench/run CSV.

One table per benchmark; rows in the order they were measured.  The CSV
columns are bench,case,metric,unit,median,min,max,reps (bench/common.h).
"""
import csv
import sys


def fmt(x):
    v = float(x)
    if v == 0 or abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    try:
        with open(sys.argv[1], newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"summarize.py: {e}", file=sys.stderr)
        return 1
    benches = []
    for r in rows:
        if r["bench"] not in benches:
            benches.append(r["bench"])
    for b in benches:
        print(f"### {b}\n")
        print("| case | metric | median | min | max | unit | n |")
        print("|---|---|---:|---:|---:|---|---:|")
        for r in rows:
            if r["bench"] == b:
                print(f"| {r['case']} | {r['metric']} | {fmt(r['median'])} | {fmt(r['min'])} "
                      f"| {fmt(r['max'])} | {r['unit']} | {r['reps']} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
