/* SPDX-License-Identifier: MIT */
/*
 * bench/ask_ab.c - rp-bench-ask-ab: a paired comparison of the cluster ask
 * round trip as the answering node sees it (docs/cluster.md,
 * "Performance").
 *
 * A client-only node asks the echo handler of each node id given, in turn
 * (the order rotates every round), waits for each reply, and prints per
 * node the p50, p90 and p99 of the round trip.  bench/ask-ab starts two
 * rp-node processes on two builds of the library (old and new) on one
 * throwaway redis-server, so the two are measured interleaved, under the
 * same load and placement: differences of a few microseconds show through,
 * where two separate rp-bench-cluster runs differ by 30 % on this VM.  The
 * client's own side of the round trip is the same for both.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"

enum { MAX_TARGETS = 8, WARMUP = 50, TIMEOUT_MS = 2000 };

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rp-bench-ask-ab --redis HOST:PORT|PATH [--prefix P] [--asks N] ID [ID...]\n"
            "  asks the echo handler of each node ID in turn (1..%d nodes, N asks each,\n"
            "  default 2000; prefix default \"ab\") and prints each node's round-trip\n"
            "  p50/p90/p99.  bench/ask-ab runs it against two builds of the library.\n",
            MAX_TARGETS);
}

/* One ask, waited for; its round trip in ns, or 0 on failure (reported). */
static int64_t ask_once(rp_cluster_node *node, const char *target)
{
    rp_future *f;
    int64_t t0 = bench_now_ns();
    if (rp_cluster_ask_node(node, target, "echo", "ab", 2, TIMEOUT_MS, &f) < 0) {
        fprintf(stderr, "rp-bench-ask-ab: ask %s: %s\n", target, rp_errmsg());
        return 0;
    }
    int rc = rp_future_wait(f, TIMEOUT_MS);
    int64_t dt = bench_now_ns() - t0;
    if (rc < 0 || rp_future_status(f) != RP_FUTURE_FULFILLED) {
        fprintf(stderr, "rp-bench-ask-ab: ask %s: %s\n", target,
                rc < 0 ? rp_errmsg() : "the ask failed");
        dt = 0;
    }
    rp_future_release(f);
    return dt;
}

int main(int argc, char **argv)
{
    const char *redis = NULL, *prefix = "ab", *targets[MAX_TARGETS];
    uint64_t asks = 2000;
    int nt = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--redis") && v) {
            redis = argv[++i];
        } else if (!strcmp(a, "--prefix") && v) {
            prefix = argv[++i];
        } else if (!strcmp(a, "--asks") && v) {
            asks = bench_parse_u64(a, argv[++i], 10, 10000000);
        } else if (a[0] == '-' || nt == MAX_TARGETS) {
            usage(stderr);
            return 2;
        } else {
            targets[nt++] = a;
        }
    }
    if (!redis || nt == 0) {
        usage(stderr);
        return 2;
    }
    rp_cluster_options o;
    rp_cluster_options_init(&o);
    o.redis = redis;
    o.prefix = prefix;
    rp_cluster_node *node;
    if (rp_cluster_join(&node, NULL, &o) < 0) {
        fprintf(stderr, "rp-bench-ask-ab: join: %s\n", rp_errmsg());
        return 1;
    }
    int64_t *rtt = calloc((size_t)asks * (size_t)nt, sizeof *rtt);
    int rc = rtt ? 0 : 1;
    bench_placement start, end;
    bench_placement_take(&start, 3);
    for (int w = 0; rc == 0 && w < WARMUP; w++)
        for (int t = 0; rc == 0 && t < nt; t++)
            rc = ask_once(node, targets[t]) ? 0 : 1;
    for (uint64_t i = 0; rc == 0 && i < asks; i++) {
        for (int k = 0; rc == 0 && k < nt; k++) {
            int t = (int)(((uint64_t)k + i) % (uint64_t)nt);
            int64_t dt = ask_once(node, targets[t]);
            rtt[(size_t)t * (size_t)asks + (size_t)i] = dt;
            rc = dt ? 0 : 1;
        }
    }
    bench_placement_take(&end, 3);
    for (int t = 0; rc == 0 && t < nt; t++) {
        int64_t *v = rtt + (size_t)t * (size_t)asks;
        bench_sort_i64(v, (size_t)asks);
        printf("%-12s ask p50 %6.1f us  p90 %6.1f us  p99 %6.1f us  (%" PRIu64 " asks, interleaved)\n",
               targets[t], bench_pct_sorted(v, (size_t)asks, 0.50) / 1e3,
               bench_pct_sorted(v, (size_t)asks, 0.90) / 1e3,
               bench_pct_sorted(v, (size_t)asks, 0.99) / 1e3, asks);
    }
    if (rc == 0)
        bench_placement_verdict(stdout, "ask-ab", "", &start, &end);
    free(rtt);
    rp_cluster_leave(node);
    return rc;
}
