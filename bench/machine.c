/* SPDX-License-Identifier: MIT */
/*
 * rp-bench-machine - what the machine can do, measured before the other
 * benchmarks: the description every results file starts with, the
 * cache-line ping-pong between two CPUs (this VM's vCPU placement changes
 * between runs: 30 ns when the two vCPUs share a core, about 200 ns when
 * they do not; building-blocks.md) and the futex wake-up latency that a
 * sleeping routee pays.  bench/run calls it first and last, so a results
 * file shows whether the placement moved during the run.
 *
 * Public headers only (STYLE.md).
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "routepool/routepool.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-bench-machine [--quick] [--label TEXT]\n"
        "  Print the machine description, the cache-line ping-pong time between\n"
        "  two CPUs and the futex wake-up latency; with RP_BENCH_CSV set, also\n"
        "  write them as CSV rows (bench \"machine\", case TEXT, default \"start\").\n"
        "  --quick   fewer trials\n"
        "Exit status: 0 ok, 1 a measurement failed, 2 bad command line.\n");
}

int main(int argc, char **argv)
{
    const char *label = "start";
    bool quick = false;
    bench_machine m;
    bench_pingpong_result pp;
    bench_wake_result wk;
    int trials;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!strcmp(argv[i], "--label") && i + 1 < argc) {
            label = argv[++i];
        } else {
            fprintf(stderr, "rp-bench-machine: unknown option or missing value '%s' (see --help)\n",
                    argv[i]);
            return 2;
        }
    }
    trials = quick ? 5 : 11;
    bench_machine_get(&m);
    printf("# rp-bench-machine (routepool %s), %s\n", rp_version(), label);
    bench_machine_print(stdout, &m);
    if (bench_pingpong(&pp, 200000, trials) != 0) {
        fprintf(stderr, "rp-bench-machine: ping-pong threads could not start\n");
        return 1;
    }
    bench_pingpong_print(stdout, &pp, trials);
    bench_csv_row("machine", label, "cache-line ping-pong, one way", "ns", pp.one_way_ns,
                  pp.min_ns, pp.max_ns, trials);
    if (bench_wake_latency(&wk, quick ? 300 : 1000, 200) != 0) {
        fprintf(stderr, "rp-bench-machine: wake-up probe could not start\n");
        return 1;
    }
    printf("# futex wake: p50 %.1f us, p99 %.1f us (%d samples, sleeper on the other CPU)\n",
           wk.p50_us, wk.p99_us, wk.samples);
    bench_csv_row("machine", label, "futex wake-up latency p50", "us", wk.p50_us, wk.p50_us,
                  wk.p50_us, wk.samples);
    bench_csv_row("machine", label, "futex wake-up latency p99", "us", wk.p99_us, wk.p99_us,
                  wk.p99_us, wk.samples);
    return 0;
}
