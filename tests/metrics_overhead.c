/* SPDX-License-Identifier: MIT */
/*
 * tests/metrics_overhead.c - what opts.metrics costs on tiny jobs.
 *
 * The target: enabling metrics costs under 3% throughput on the
 * tiny-job benchmark.  One thread submits N empty jobs (default 2,000,000)
 * to a 2-routee round-robin pool (stealing on, the pool's defaults, as in
 * bench/tiny.c); a round is timed from the first submit until wait_idle
 * returns.  Every round gets a fresh pool (metrics on or off) and an
 * untimed warm-up of the same size, so that where the kernel placed one
 * pool's threads does not stick to one side of the comparison (with pools
 * kept across rounds, one pool was steadily 30-70% slower than the other
 * whichever had metrics); REPS rounds each, alternating which goes first
 * (on/off, off/on, ...) so that drift falls on both.  Prints the
 * median ns per job of each, the spread, and the cost of metrics; also the
 * process CPU time per job, which other load on the machine disturbs less.
 *
 * The counters every pool keeps (enqueued, run, ...) are not switched by
 * opts.metrics; what it adds is busy time (a clock read per busy period)
 * and the depth and queue-wait histograms (one enqueue in 16: a clock read
 * at enqueue and one at start).
 *
 * Before the rounds it measures a cache-line ping-pong between two
 * threads: the host sometimes places the vCPUs far apart, which changes
 * every figure (see shared/notes/building-blocks.md).
 *
 * Besides each side's median it prints the median of the paired ratios
 * (round r with metrics / round r without, run back to back), which cancels
 * drift.  On a 2-vCPU machine 2 routees + the submitter oversubscribe the
 * CPUs and rounds swing by tens of percent with thread placement; 1 routee
 * (third argument) gives steadier figures.
 *
 * Not a test (it does not pass or fail on the numbers); run it by hand:
 *   metrics_overhead [jobs [reps [routees]]]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "routepool/routepool.h"

#define MAX_REPS 51

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "metrics_overhead: %s: %s\n", what, rp_errmsg());
    exit(1);
}

static void empty_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
}

/* ---- cache-line ping-pong ---- */

static _Alignas(64) atomic_int ball;

static void *pong(void *arg)
{
    int rounds = *(int *)arg;

    for (int i = 0; i < rounds; i++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1) {
        }
        atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

/* One-way latency of handing a cache line between two threads, ns. */
static double pingpong_ns(int rounds)
{
    pthread_t t;
    int64_t t0;

    atomic_store(&ball, 0);
    if (pthread_create(&t, NULL, pong, &rounds) != 0)
        die("pthread_create");
    t0 = now_ns();
    for (int i = 0; i < rounds; i++) {
        atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2) {
        }
    }
    t0 = now_ns() - t0;
    pthread_join(t, NULL);
    return (double)t0 / rounds / 2;
}

/* ---- rounds ---- */

typedef struct config {
    const char *name;
    bool metrics;
    rp_pool *pool;
    double ns_per_job[MAX_REPS];
    double cpu_per_job[MAX_REPS]; /* process CPU time: less sensitive to
                                     other load on the machine */
} config;

static uint64_t jobs_run(rp_pool *p)
{
    uint64_t run = 0;

    for (size_t i = 0; i < rp_pool_size(p); i++) {
        rp_routee_stats st;
        if (rp_routee_stats_get(rp_pool_routee(p, i), &st) != 0)
            die("rp_routee_stats_get");
        run += st.run;
    }
    return run;
}

static int64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double round_ns_per_job(config *c, size_t n, double *cpu_per_job)
{
    uint64_t before = jobs_run(c->pool);
    int64_t c0 = cpu_now_ns(), t0 = now_ns();

    for (size_t i = 0; i < n; i++)
        if (rp_pool_submit(c->pool, empty_job, NULL) != 0)
            die("rp_pool_submit");
    if (rp_pool_wait_idle(c->pool, -1) != 0)
        die("rp_pool_wait_idle");
    t0 = now_ns() - t0;
    c0 = cpu_now_ns() - c0;
    if (jobs_run(c->pool) - before != n)
        die("a round lost jobs");
    if (cpu_per_job)
        *cpu_per_job = (double)c0 / (double)n;
    return (double)t0 / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n, double *lo, double *hi)
{
    double s[MAX_REPS];

    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    *lo = s[0];
    *hi = s[n - 1];
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static unsigned routees = 2;

static void start(config *c)
{
    rp_pool_options o;

    rp_pool_options_init(&o);
    o.name = c->metrics ? "mon" : "moff";
    o.routees = routees;
    o.metrics = c->metrics;
    o.strategy = rp_strategy_round_robin();
    if (rp_pool_create(&c->pool, &o) != 0)
        die("rp_pool_create");
    /* RP_OVERHEAD_TRACE=path: the "on" pool also traces (default options),
     * so the figure is the cost of metrics and tracing together. */
    if (c->metrics && getenv("RP_OVERHEAD_TRACE") &&
        rp_trace_start(c->pool, getenv("RP_OVERHEAD_TRACE"), NULL) != 0)
        die("rp_trace_start");
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    double ratio[MAX_REPS], cpu_ratio[MAX_REPS], med_ratio, lo, hi;
    config cs[2] = {{"metrics on", true, NULL, {0}, {0}}, {"metrics off", false, NULL, {0}, {0}}};
    double med[2], cpu[2];

    if (argc > 3)
        routees = (unsigned)atoi(argv[3]);
    if (n == 0 || reps < 1 || reps > MAX_REPS || routees < 1 || routees > 64) {
        fprintf(stderr, "usage: metrics_overhead [jobs >= 1 [reps 1..%d [routees 1..64]]]\n",
                MAX_REPS);
        return 2;
    }
    printf("metrics_overhead: %zu empty jobs, 1 submitter, %u routee(s) round-robin, steal on, "
           "%d alternating reps; %ld online CPUs\n",
           n, routees, reps, sysconf(_SC_NPROCESSORS_ONLN));
    printf("cache-line ping-pong, one way: %.0f ns\n", pingpong_ns(200000));
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < 2; k++) {
            config *c = &cs[(r + k) % 2];
            start(c);
            (void)round_ns_per_job(c, n, NULL); /* warm-up: freelists grow here */
            c->ns_per_job[r] = round_ns_per_job(c, n, &c->cpu_per_job[r]);
            rp_pool_destroy(c->pool);
        }
    for (int c = 0; c < 2; c++) {
        med[c] = median(cs[c].ns_per_job, reps, &lo, &hi);
        printf("%-12s median %6.1f ns/job  (%5.2f M jobs/s)  min %6.1f  max %6.1f  rounds:",
               cs[c].name, med[c], 1e3 / med[c], lo, hi);
        for (int r = 0; r < reps; r++)
            printf(" %.1f", cs[c].ns_per_job[r]);
        cpu[c] = median(cs[c].cpu_per_job, reps, &lo, &hi);
        printf("\n%-12s median %6.1f CPU ns/job (all threads)  min %6.1f  max %6.1f\n", "",
               cpu[c], lo, hi);
    }
    for (int r = 0; r < reps; r++) {
        ratio[r] = cs[0].ns_per_job[r] / cs[1].ns_per_job[r];
        cpu_ratio[r] = cs[0].cpu_per_job[r] / cs[1].cpu_per_job[r];
    }
    med_ratio = median(ratio, reps, &lo, &hi);
    printf("paired on/off ratio: median %+.2f%% time (min %+.2f%%, max %+.2f%%), ",
           (med_ratio - 1) * 100, (lo - 1) * 100, (hi - 1) * 100);
    med_ratio = median(cpu_ratio, reps, &lo, &hi);
    printf("median %+.2f%% CPU\n", (med_ratio - 1) * 100);
    printf("cost of metrics: %+.2f%% time per job (throughput %+.2f%%), %+.2f%% CPU per job; "
           "target < 3%%\n",
           (med[0] / med[1] - 1) * 100, (med[1] / med[0] - 1) * 100, (cpu[0] / cpu[1] - 1) * 100);
    printf("cache-line ping-pong after: %.0f ns\n", pingpong_ns(200000));
    return 0;
}
