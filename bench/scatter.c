/* SPDX-License-Identifier: MIT */
/*
 * scatter.c - rp-bench-scatter: what hedging costs and what it buys.
 *
 * 1. Time to first reply: a 3-way scatter-gather ask of a trivial job vs a
 *    single ask through a round-robin router, on an idle pool of 3 routees,
 *    one request at a time.  Target: scatter p50 <= 2x single-ask p50.
 * 2. Hedging: a job that takes ~20 us but stalls 100 ms with probability 1%
 *    (a slow downstream: the stall sleeps in 1 ms steps and stops early when
 *    rp_job_cancelled() turns true).  p50/p99/p99.9 latency and the CPU the
 *    process spent per request for: a single ask, a 3-way scatter, and
 *    tail-chopping at 2 ms.
 *
 * Requests run one at a time (closed loop), so each latency is that of one
 * request on an otherwise idle pool.  Fixed seeds; warm-up; medians over
 * repetitions.  Usage: rp-bench-scatter [--quick] [--reps N] [--help]
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "routepool/routepool.h"

#define ROUTEES 3

static _Atomic uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double spin_per_us;
static _Atomic uint64_t sink;

/* A shared xorshift, one draw per job: which job stalls is random, and the
 * same seed gives the same sequence of draws. */
static uint64_t draw(void)
{
    uint64_t x = atomic_load(&rng_state), y;
    do {
        y = x ^ (x << 13);
        y ^= y >> 7;
        y ^= y << 17;
    } while (!atomic_compare_exchange_weak(&rng_state, &x, y));
    return y;
}

static void trivial(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    rp_job_reply(ctx, (void *)1);
}

static void stalling(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    if (draw() % 100 == 0) {
        /* A stall: 100 ms of waiting on something slow, abandoned when
         * another routee already answered. */
        for (int ms = 0; ms < 100 && !rp_job_cancelled(ctx); ms++)
            usleep(1000);
    } else {
        atomic_fetch_add(&sink, bench_spin((uint64_t)(20 * spin_per_us), 1));
    }
    rp_job_reply(ctx, (void *)1);
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

typedef struct result {
    double p50_us, p99_us, p999_us, cpu_us_per_req;
    int failed;
} result;

/* n requests, one at a time; latencies into lat (ns). */
static result run(rp_router *rt, rp_job_fn fn, int n, int warm, int64_t *lat)
{
    result res = {0};
    double cpu0 = 0;

    for (int i = -warm; i < n; i++) {
        rp_future *f;
        int64_t t0;

        if (i == 0)
            cpu0 = cpu_seconds();
        t0 = bench_now_ns();
        if (rp_router_ask(rt, fn, NULL, 10000, &f) != 0) {
            fprintf(stderr, "ask failed: %s\n", rp_errmsg());
            exit(1);
        }
        rp_future_wait(f, -1);
        if (i >= 0) {
            lat[i] = bench_now_ns() - t0;
            res.failed += rp_future_status(f) != RP_FUTURE_FULFILLED;
        }
        rp_future_release(f);
    }
    res.cpu_us_per_req = (cpu_seconds() - cpu0) / n * 1e6;
    bench_sort_i64(lat, (size_t)n);
    res.p50_us = bench_pct_sorted(lat, (size_t)n, 0.50) / 1e3;
    res.p99_us = bench_pct_sorted(lat, (size_t)n, 0.99) / 1e3;
    res.p999_us = bench_pct_sorted(lat, (size_t)n, 0.999) / 1e3;
    return res;
}

static rp_router *make_sg(rp_pool *pool, double interval_ms, const char *name)
{
    rp_scatter_gather_options sg;
    rp_router_options ro;
    rp_router *rt;

    rp_scatter_gather_options_init(&sg);
    sg.timeout_ms = 5000;
    /* CPU-bound idempotent jobs: the figures in docs/futures.md cancel
     * losers (not the default since seed 004). */
    sg.cancel_losers = true;
    sg.interval_ms = interval_ms;
    rp_router_options_init(&ro);
    ro.name = name;
    if (rp_router_create_scatter_gather(&rt, pool, &sg, &ro) != 0) {
        fprintf(stderr, "scatter router: %s\n", rp_errmsg());
        exit(1);
    }
    return rt;
}

static double median_of(double *v, int n)
{
    return bench_median(v, (size_t)n);
}

static void usage(FILE *f)
{
    fputs("usage: rp-bench-scatter [--quick] [--reps N] [--help]\n"
          "  Time to first reply of a 3-way scatter vs a single ask, and the\n"
          "  hedging demonstration (1% of jobs stall 100 ms): p99 and CPU of a\n"
          "  single ask, a 3-way scatter and tail-chopping at 2 ms.\n"
          "  --quick  fewer requests (about 20 s instead of about 2 min)\n"
          "  --reps N repetitions per measurement (default 3)\n"
          "exit status: 0 ok, 1 a routepool call failed, 2 usage error\n", f);
}

int main(int argc, char **argv)
{
    int reps = 3, n_ttfr = 20000, n_hedge = 3000;
    bench_machine m;
    bench_calib cal;
    rp_pool_options o;
    rp_pool *pool;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quick")) {
            n_ttfr = 5000;
            n_hedge = 1000;
            reps = 1;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = (int)bench_parse_u64("--reps", argv[++i], 1, 50);
        } else {
            fprintf(stderr, "rp-bench-scatter: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    bench_machine_get(&m);
    printf("# rp-bench-scatter (routepool %s)\n", rp_version());
    bench_machine_print(stdout, &m);
    bench_calibrate(&cal, 200, 11);
    spin_per_us = cal.iters_per_us;
    printf("# spin loop:   %.1f iterations/us\n# routees:     %d; requests one at a time; medians of %d reps\n\n",
           spin_per_us, ROUTEES, reps);

    rp_pool_options_init(&o);
    o.routees = ROUTEES;
    o.name = "bench";
    if (rp_pool_create(&pool, &o) != 0)
        return 1;
    rp_router *single = rp_pool_router(pool);
    rp_router *sg = make_sg(pool, 0, "scatter");
    rp_router *chop = make_sg(pool, 2.0, "tail-chop");
    int64_t *lat = malloc(sizeof *lat * (size_t)(n_ttfr > n_hedge ? n_ttfr : n_hedge));
    double a50[50], s50[50], a99[50], s99[50];

    for (int r = 0; r < reps; r++) {
        result a = run(single, trivial, n_ttfr, 1000, lat);
        result s = run(sg, trivial, n_ttfr, 1000, lat);
        a50[r] = a.p50_us, a99[r] = a.p99_us, s50[r] = s.p50_us, s99[r] = s.p99_us;
    }
    double ask50 = median_of(a50, reps), sc50 = median_of(s50, reps);
    printf("## Time to first reply, trivial job (%d requests x %d reps)\n\n", n_ttfr, reps);
    printf("| request | p50 us | p99 us |\n|---|---:|---:|\n");
    printf("| single ask (round-robin) | %.1f | %.1f |\n", ask50, median_of(a99, reps));
    printf("| 3-way scatter-gather | %.1f | %.1f |\n", sc50, median_of(s99, reps));
    printf("\nscatter / single ask at p50: %.2fx (target <= 2x): %s\n\n", sc50 / ask50,
           sc50 / ask50 <= 2.0 ? "met" : "NOT met");

    const char *names[] = {"single ask", "3-way scatter-gather", "tail-chopping, 2 ms"};
    rp_router *routers[] = {single, sg, chop};
    printf("## Hedging: 1%% of jobs stall 100 ms, else ~20 us of CPU (%d requests x %d reps)\n\n",
           n_hedge, reps);
    printf("| request | p50 us | p99 us | p99.9 us | CPU us/request | failed |\n|---|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < 3; k++) {
        double p50[50], p99[50], p999[50], cpu[50];
        int failed = 0;
        for (int r = 0; r < reps; r++) {
            result x = run(routers[k], stalling, n_hedge, 100, lat);
            p50[r] = x.p50_us, p99[r] = x.p99_us, p999[r] = x.p999_us, cpu[r] = x.cpu_us_per_req;
            failed += x.failed;
        }
        printf("| %s | %.1f | %.1f | %.1f | %.1f | %d |\n", names[k], median_of(p50, reps),
               median_of(p99, reps), median_of(p999, reps), median_of(cpu, reps), failed);
    }
    printf("\n(CPU: the whole process - submitter, routees, timer - per request.)\n");
    rp_router_destroy(sg);
    rp_router_destroy(chop);
    rp_pool_destroy(pool);
    free(lat);
    return 0;
}
